#include <fingerprint/cmd/command.hpp>
#include <fingerprint/store/store.hpp>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>

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

} // namespace

// The runner is linked statically, so that a hooked link pays 2 ms to start
// it rather than 8 (README, "Performance"); libpq and its dependencies
// cannot be. A call that names a PostgreSQL store therefore runs
// fingerprint-postgresql, installed beside this runner, with the same
// arguments; without it, the store reports that it is missing.
int
main(int argc, char** argv)
{
  if (names_database(argc, argv)) {
    char self[PATH_MAX];
    const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0) {
      std::string path(self, static_cast<size_t>(length));
      path = path.substr(0, path.rfind('/') + 1) + "fingerprint-postgresql";
      ::execv(path.c_str(), argv);
      if (errno != ENOENT) {
        std::fprintf(stderr, "fingerprint: cannot run %s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
      }
    }
  }
  return fingerprint::cmd::fingerprint_main(argc, argv);
}
