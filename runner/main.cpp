#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/launch.hpp>
#include <fingerprint/store/store.hpp>

#include "query_client.hpp"
#include "recorder.hpp"
#include "recorder_protocol.hpp"
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

// The launcher and the runner spell the variable each on its own.
static_assert(std::string_view(fingerprint::recorder::k_start_variable)
              == std::string_view(fingerprint::cmd::k_recorder_start_variable));

namespace {

// Whether this call names a database: an argument (--store URL,
// --store=URL, migrate --to URL) or FINGERPRINT_DIR.
bool
names_database(int argc, char** argv)
{
  for (int i = 1; i < argc; ++i) {
    std::string_view argument = argv[i];
    if (argument == "--") {
      break; // launch: what follows is the link command
    }
    if (const size_t equals = argument.find('='); argument.starts_with("--") && equals != std::string_view::npos) {
      argument.remove_prefix(equals + 1);
    }
    if (fingerprint::store::is_database_url(argument)) {
      return true;
    }
  }
  const char* dir = std::getenv("FINGERPRINT_DIR");
  return dir != nullptr && fingerprint::store::is_database_url(dir);
}

// $FINGERPRINT_CPU_LOG names a file to which each run appends one line: the
// subcommand and the CPU time this process used, user and system, in
// microseconds. It counts from the fork that started the runner (the
// exec included) and leaves out the tools a hook runs, so that summed
// over a build it is the hooks' own cost, without the compilers' noise
// (tests/bench/hooks_overhead.sh). The recorder logs each hook it served
// the same way ("recorder-launch", runner/recorder.cpp).
void
log_cpu(const char* label)
{
  struct rusage usage
  {};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto micros = [](const timeval& t) { return static_cast<long long>(t.tv_sec) * 1'000'000 + t.tv_usec; };
  fingerprint::recorder::write_cpu_line(label, micros(usage.ru_utime), micros(usage.ru_stime));
}

// What the recorder serves: hooks (launch) whose store is no database.
bool
recorder_serves(int argc, char** argv)
{
  const char* command = fingerprint::recorder::command_of(argc, argv);
  return command != nullptr && std::strcmp(command, "launch") == 0 && !names_database(argc, argv);
}

int
run_here(int argc, char** argv)
{
  const int status = fingerprint::cmd::fingerprint_main(argc, argv);
  log_cpu(argc > 1 ? argv[1] : "-");
  return status;
}

} // namespace

// The runner is linked statically, so that a hooked link pays 2 ms to start
// it rather than 8 (README, "Performance"); libpq and its dependencies
// cannot be. A call that names a PostgreSQL store therefore runs
// fingerprint-postgresql, installed beside this runner, with the same
// arguments; without it, the store reports that it is missing.
int
main(int argc, char** argv)
{
  // Started by a hook that found none (runner/recorder.hpp).
  if (argc == 3 && std::strcmp(argv[1], "--serve-recorder") == 0) {
    const int status = fingerprint::recorder::serve(
      argv[2], {recorder_serves, fingerprint::cmd::fingerprint_main, fingerprint::recorder::write_cpu_line});
    std::fflush(nullptr);
    ::_exit(status); // no exit handlers while its threads end
  }
  if (names_database(argc, argv)) {
    char self[PATH_MAX];
    const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0) {
      std::string path(self, static_cast<size_t>(length));
      path = path.substr(0, path.rfind('/') + 1) + "fingerprint-postgresql";
      // A recorder serves no database store: none is started from there.
      ::unsetenv(fingerprint::recorder::k_start_variable);
      // A query the resident fingerprint-postgresql answers, on a
      // connection it keeps (runner/query_client.hpp).
      if (const auto status = fingerprint::recorder::ask_query_server(path, argc, argv)) {
        return *status;
      }
      ::execv(path.c_str(), argv);
      if (errno != ENOENT) {
        std::fprintf(stderr, "fingerprint: cannot run %s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
      }
    }
  }
  return run_here(argc, argv);
}
