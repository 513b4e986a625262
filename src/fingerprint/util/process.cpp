#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/process.hpp>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fingerprint::util {

namespace {

class SpawnActions
{
public:
  SpawnActions() { ::posix_spawn_file_actions_init(&m_actions); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  ~SpawnActions() { ::posix_spawn_file_actions_destroy(&m_actions); }
  posix_spawn_file_actions_t*
  get()
  {
    return &m_actions;
  }

private:
  posix_spawn_file_actions_t m_actions{};
};

// What a child starts with: SIGPIPE at its default, whatever this process
// does with it (the recorder ignores it, runner/recorder.cpp).
class SpawnAttributes
{
public:
  SpawnAttributes()
  {
    ::posix_spawnattr_init(&m_attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    ::posix_spawnattr_setsigdefault(&m_attributes, &defaults);
    ::posix_spawnattr_setflags(&m_attributes, POSIX_SPAWN_SETSIGDEF);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  ~SpawnAttributes() { ::posix_spawnattr_destroy(&m_attributes); }
  const posix_spawnattr_t*
  get() const
  {
    return &m_attributes;
  }

private:
  posix_spawnattr_t m_attributes{};
};

// argv as posix_spawn takes it; the strings must outlive it.
std::vector<char*>
c_argv(const std::vector<std::string>& argv)
{
  std::vector<char*> result;
  result.reserve(argv.size() + 1);
  for (const auto& argument : argv) {
    result.push_back(const_cast<char*>(argument.c_str()));
  }
  result.push_back(nullptr);
  return result;
}

// Waits for `pid`; its exit status, or 128 + the signal that ended it.
Expected<int>
wait_for(pid_t pid, const std::string& name)
{
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return make_error(name, errno_text(errno));
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

Expected<int>
run_program(const std::vector<std::string>& argv)
{
  auto arguments = c_argv(argv);
  pid_t pid = 0;
  const SpawnAttributes attributes;
  const int spawned = ::posix_spawnp(&pid, arguments[0], nullptr, attributes.get(), arguments.data(), environ);
  if (spawned != 0) {
    return make_error(argv.front(), errno_text(spawned));
  }
  return wait_for(pid, argv.front());
}

void
exec_program(const std::vector<std::string>& argv)
{
  auto arguments = c_argv(argv);
  ::execvp(arguments[0], arguments.data());
}

Expected<Captured>
run_captured(const std::vector<std::string>& argv, std::string_view input)
{
  const auto fail = [&](int errno_value) { return make_error(argv[0], errno_text(errno_value)); };
  // Its standard input is a socket rather than a pipe: send(MSG_NOSIGNAL)
  // turns a program that exits without reading everything into EPIPE, where
  // writing to a pipe would raise SIGPIPE and kill the runner.
  int in[2];
  int out[2];
  int err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    return fail(errno);
  }
  Fd to_child(in[0]);
  Fd child_in(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return fail(errno);
  }
  Fd from_child(out[0]);
  Fd child_out(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return fail(errno);
  }
  Fd errors_from_child(err[0]);
  Fd child_err(err[1]);

  SpawnActions actions;
  ::posix_spawn_file_actions_adddup2(actions.get(), child_in.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), child_out.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), child_err.get(), STDERR_FILENO);
  auto arguments = c_argv(argv);
  pid_t pid = 0;
  const SpawnAttributes attributes;
  if (const int spawned =
        ::posix_spawn(&pid, argv[0].c_str(), actions.get(), attributes.get(), arguments.data(), environ);
      spawned != 0) {
    return fail(spawned);
  }
  // Only the child may hold its ends, or it would never see end of file.
  child_in.reset();
  child_out.reset();
  child_err.reset();

  Captured captured;
  int poll_error = 0;
  if (input.empty()) {
    to_child.reset();
  }
  while (to_child || from_child || errors_from_child) {
    std::vector<pollfd> fds;
    for (const Fd* fd : {&to_child, &from_child, &errors_from_child}) {
      if (*fd) {
        fds.push_back({fd->get(), static_cast<short>(fd == &to_child ? POLLOUT : POLLIN), 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      poll_error = errno;
      break;
    }
    for (const pollfd& ready : fds) {
      if (ready.revents == 0) {
        continue;
      }
      if (ready.fd == to_child.get()) {
        const ssize_t sent = ::send(ready.fd, input.data(), input.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent >= 0) {
          input.remove_prefix(static_cast<size_t>(sent));
        } else if (errno != EAGAIN && errno != EINTR) {
          input = {}; // it stopped reading; its exit status and errors say why
        }
        if (input.empty()) {
          to_child.reset();
        }
        continue;
      }
      Fd& source = ready.fd == from_child.get() ? from_child : errors_from_child;
      char buffer[65536];
      const ssize_t got = ::read(ready.fd, buffer, sizeof buffer);
      if (got > 0) {
        (&source == &from_child ? captured.out : captured.err).append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        source.reset();
      }
    }
  }
  // Reaped on every path, the failed poll included: the closed descriptors
  // make it end.
  to_child.reset();
  from_child.reset();
  errors_from_child.reset();
  auto status = wait_for(pid, argv[0]);
  if (!status) {
    return status.error();
  }
  if (poll_error != 0) {
    return fail(poll_error);
  }
  captured.status = *status;
  return captured;
}

std::optional<std::string>
find_program(std::string_view name)
{
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + std::string(name);
    struct stat status;
    if (::stat(candidate.c_str(), &status) == 0 && S_ISREG(status.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) {
      return std::nullopt;
    }
    dirs.remove_prefix(colon + 1);
  }
}

} // namespace fingerprint::util
