#include "recorder.hpp"

#include <fingerprint/cmd/launch.hpp>
#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/hook/build_id.hpp>

#include "recorder_protocol.hpp"
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <fcntl.h>
#include <malloc.h>
#include <mutex>
#include <poll.h>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace fingerprint::recorder {

namespace {

// A recorder serves this many calls, then lets the next hook start another:
// whatever a call leaves behind in the process stays bounded.
constexpr unsigned long k_calls_per_recorder = 100000;

// One hook acts at a time: while a call holds this, the process's
// environment, working directory, standard streams, umask, launch executor
// and claimed build are that call's (enter and leave).
std::mutex g_turn;
char** g_own_environment = nullptr;
int g_null = -1; // /dev/null, for the standard streams between calls
std::atomic<long long> g_logged_us{0};

long long
micros(const timeval& t)
{
  return static_cast<long long>(t.tv_sec) * 1'000'000 + t.tv_usec;
}

// $FINGERPRINT_CPU_LOG in the environment the process has now, or null
// when it is unset or empty: then no CPU is counted, nor logged.
const char*
cpu_log_path()
{
  const char* path = std::getenv("FINGERPRINT_CPU_LOG");
  return path != nullptr && *path != '\0' ? path : nullptr;
}

// This process's CPU and that of the programs it waited for (git, for
// provenance), user and system, in microseconds.
void
cpu_now(long long& user, long long& system)
{
  rusage self{};
  rusage children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  user = micros(self.ru_utime) + micros(children.ru_utime);
  system = micros(self.ru_stime) + micros(children.ru_stime);
}

// Moves `size` bytes a step at a time (a read, a send) until all are moved;
// false at the end of the stream or an error.
template <typename Step>
bool
move_all(char* p, size_t size, Step step)
{
  while (size > 0) {
    const ssize_t n = step(p, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

} // namespace

bool
read_all(int fd, void* data, size_t size)
{
  return move_all(static_cast<char*>(data), size, [fd](char* p, size_t n) { return ::read(fd, p, n); });
}

bool
send_all(int fd, const void* data, size_t size)
{
  return move_all(const_cast<char*>(static_cast<const char*>(data)), size, [fd](char* p, size_t n) {
    return ::send(fd, p, n, MSG_NOSIGNAL);
  });
}

namespace {

bool
send_reply(int fd, Action action, uint32_t value, const std::vector<std::string>& argv = {})
{
  std::string strings;
  for (const auto& argument : argv) {
    strings.append(argument.c_str(),
                   std::strlen(argument.c_str()) + 1); // an argument ends at its first NUL, as execve reads it
  }
  Reply reply{action, value, static_cast<uint32_t>(argv.size()), static_cast<uint32_t>(strings.size())};
  std::string message(reinterpret_cast<const char*>(&reply), sizeof reply);
  message += strings;
  return send_all(fd, message.data(), message.size());
}

class RemoteExecutor;

// One hook: the request, the descriptors it came with, and what the
// process must be while it acts for it.
struct Call
{
  int socket = -1;
  long launcher = 0;
  Request request{};
  int fds[k_request_fds] = {-1, -1, -1, -1}; // stdin, stdout, stderr, working directory
  std::string strings;                       // argv and environment point into it
  std::vector<char*> argv;
  std::vector<char*> env;
  hook::ClaimedBuild claimed;
  RemoteExecutor* executor = nullptr;
  long long user_us = 0;
  long long system_us = 0;
  long long entered_user = 0;
  long long entered_system = 0;
  bool counted = false; // the call logs its CPU ($FINGERPRINT_CPU_LOG)

  ~Call()
  {
    for (int fd : fds) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    if (socket >= 0) {
      ::close(socket);
    }
  }
};

void enter(Call& call);
void leave(Call& call);

// The launcher runs the command: told to, and waited for without the turn.
class RemoteExecutor final : public cmd::LaunchExecutor
{
public:
  RemoteExecutor(Call& call, std::unique_lock<std::mutex>& turn)
    : call_(call)
    , turn_(turn)
  {
  }

  // The launcher execs it: the call ends with that answer (an exception
  // through the runner's code would do as well, at about a million
  // instructions of unwinding in this static binary).
  bool
  exec(const std::vector<std::string>& argv) override
  {
    std::fflush(nullptr);
    handed_over = true;
    if (!send_reply(call_.socket, k_exec, 0, argv)) {
      errno = EPIPE;
    }
    return true;
  }

  bool handed_over = false;

  Expected<int>
  run(const std::vector<std::string>& argv) override
  {
    std::fflush(nullptr);
    if (!send_reply(call_.socket, k_run, 0, argv)) {
      return Error{"fingerprint-launch went away before it ran " + argv.front()};
    }
    Status status{};
    leave(call_);
    turn_.unlock(); // other hooks act while this one's command runs
    const bool answered = read_all(call_.socket, &status, sizeof status);
    turn_.lock();
    enter(call_);
    if (!answered) {
      return Error{"fingerprint-launch went away before " + argv.front() + " ended"};
    }
    return static_cast<int>(status.status);
  }

private:
  Call& call_;
  std::unique_lock<std::mutex>& turn_;
};

void
enter(Call& call)
{
  environ = call.env.data();
  // Counted only for a call that logs it: eight getrusage a call otherwise.
  call.counted = cpu_log_path() != nullptr;
  if (call.counted) {
    cpu_now(call.entered_user, call.entered_system);
  }
  (void)::fchdir(call.fds[3]); // received as a directory; checked when the call came
  for (int i = 0; i < 3; ++i) {
    ::dup2(call.fds[i], i);
  }
  ::umask(static_cast<mode_t>(call.request.umask));
  hook::set_hook_process(call.launcher);
  hook::set_claimed_build(call.claimed);
  cmd::set_launch_executor(call.executor);
}

void
leave(Call& call)
{
  std::fflush(nullptr);
  call.claimed = hook::claimed_build();
  cmd::set_launch_executor(nullptr);
  hook::set_hook_process(0);
  hook::set_claimed_build({});
  for (int i = 0; i < 3; ++i) {
    ::dup2(g_null, i); // the call's streams are not held between its turns
  }
  environ = g_own_environment;
  (void)::chdir("/");
  if (call.counted) {
    long long user = 0;
    long long system = 0;
    cpu_now(user, system);
    call.user_us += user - call.entered_user;
    call.system_us += system - call.entered_system;
  }
}

// Takes the request and its descriptors.
bool
receive(Call& call)
{
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_request_fds)] = {};
  iovec part{&call.request, sizeof call.request};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = ::recvmsg(call.socket, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    return false;
  }
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
      continue;
    }
    const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    std::vector<int> received(count);
    std::memcpy(received.data(), CMSG_DATA(header), count * sizeof(int));
    if (count == k_request_fds && call.fds[0] < 0) {
      std::copy(received.begin(), received.end(), call.fds);
    } else {
      for (int fd : received) {
        ::close(fd); // not what a launcher sends: not kept
      }
    }
  }
  if ((message.msg_flags & MSG_CTRUNC) != 0) {
    return false;
  }
  if (static_cast<size_t>(n) < sizeof call.request
      && !read_all(
        call.socket, reinterpret_cast<char*>(&call.request) + n, sizeof call.request - static_cast<size_t>(n))) {
    return false;
  }
  const Request& request = call.request;
  struct stat directory
  {};
  if (request.magic != k_magic || call.fds[3] < 0 || ::fstat(call.fds[3], &directory) != 0
      || !S_ISDIR(directory.st_mode) || request.argc < 2 || request.bytes > (1U << 30)) {
    return false;
  }
  call.strings.resize(request.bytes);
  if (!read_all(call.socket, call.strings.data(), call.strings.size())) {
    return false;
  }
  std::vector<char*> all;
  size_t start = 0;
  for (size_t i = 0; i < call.strings.size(); ++i) {
    if (call.strings[i] == '\0') {
      all.push_back(call.strings.data() + start);
      start = i + 1;
    }
  }
  if (all.size() != static_cast<size_t>(request.argc) + request.envc || start != call.strings.size()) {
    return false;
  }
  call.argv.assign(all.begin(), all.begin() + request.argc);
  call.argv.push_back(nullptr);
  call.env.assign(all.begin() + request.argc, all.end());
  call.env.push_back(nullptr);
  return true;
}

void
set_timeout(int fd, int option, int seconds)
{
  const timeval limit{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, option, &limit, sizeof limit);
}

void
serve_call(int socket, long launcher, const Hooks& hooks)
{
  Call call;
  call.socket = socket;
  call.launcher = launcher;
  // A launcher sends its request at once and reads every answer at once: a
  // peer that does neither is not let to hold a thread, or the turn.
  set_timeout(socket, SO_RCVTIMEO, 10);
  set_timeout(socket, SO_SNDTIMEO, 10);
  if (!receive(call)) {
    return; // the launcher, with no reply, runs the runner itself
  }
  set_timeout(socket, SO_RCVTIMEO, 0); // the status comes when the command ends, however long it runs
  const int argc = static_cast<int>(call.request.argc);
  std::unique_lock turn(g_turn);
  RemoteExecutor executor(call, turn);
  call.executor = &executor;
  enter(call);
  if (!hooks.serves(argc, call.argv.data()) || std::getenv("FINGERPRINT_TEST_RECORDER_FALLBACK") != nullptr) {
    leave(call);
    send_reply(call.socket, k_fallback, 0);
    return;
  }
  int status = 0;
  try {
    status = hooks.run(argc, call.argv.data());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fingerprint: internal error: %s\n", error.what());
    status = 1;
  }
  const bool die = std::getenv("FINGERPRINT_TEST_RECORDER_DIE") != nullptr;
  // Logged while the call's environment and directory are the process's,
  // as its own runner would log it; what follows falls to "recorder".
  if (call.counted) {
    long long user = 0;
    long long system = 0;
    cpu_now(user, system);
    const long long call_user = call.user_us + user - call.entered_user;
    const long long call_system = call.system_us + system - call.entered_system;
    const char* command = command_of(argc, call.argv.data());
    const std::string label = std::string("recorder-") + (command != nullptr ? command : "-");
    hooks.log_cpu(label.c_str(), call_user, call_system);
    g_logged_us += call_user + call_system;
    call.counted = false; // what follows falls to "recorder"
  }
  leave(call);
  turn.unlock();
  // The build tool waits for the end of the step's streams: this process
  // lets go of them before the launcher exits.
  for (int& fd : call.fds) {
    ::close(fd);
    fd = -1;
  }
  if (die) {
    return; // a recorder that ends before it answers (tests/cli/recorder.sh)
  }
  if (!executor.handed_over) {
    send_reply(call.socket, k_exit, static_cast<uint32_t>(status));
  }
}

// The namespace of `kind` a process is in ("mnt:[4026531841]"); empty when
// it cannot be read.
std::string
namespace_of(const std::string& process, const char* kind)
{
  char target[64];
  const std::string link = "/proc/" + process + "/ns/" + kind;
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

int
idle_seconds()
{
  const char* text = std::getenv("FINGERPRINT_RECORDER_IDLE");
  const int value = text != nullptr ? std::atoi(text) : 0;
  return value > 0 ? value : 60;
}

// The threads that serve calls: one per call in flight (a call's thread
// waits while its command runs), kept for the next call rather than started
// anew for each.
class Workers
{
public:
  explicit Workers(const Hooks& hooks)
    : m_hooks(hooks)
  {
  }

  // Hands an accepted call to an idle thread, or to a new one. False when
  // no thread could be had (the call is closed: its launcher runs the
  // runner itself).
  bool
  serve(int fd, long launcher)
  {
    std::unique_lock lock(m_mutex);
    m_queue.emplace_back(fd, launcher);
    ++m_open;
    // An idle thread takes it, unless the idle ones are all spoken for
    // already (woken, but not yet back to take their call).
    if (m_queue.size() <= static_cast<size_t>(m_idle)) {
      m_wake.notify_one();
      return true;
    }
    try {
      std::thread([this] { work(); }).detach();
    } catch (const std::system_error&) {
      m_queue.pop_back();
      --m_open;
      ::close(fd);
      return false;
    }
    return true;
  }

  int
  open_calls()
  {
    std::lock_guard lock(m_mutex);
    return m_open;
  }

  // Waits for the calls in flight; the threads then end.
  void
  finish()
  {
    std::unique_lock lock(m_mutex);
    m_closing = true;
    m_wake.notify_all();
    m_done.wait(lock, [&] { return m_open == 0; });
  }

private:
  void
  work()
  {
    std::unique_lock lock(m_mutex);
    while (true) {
      while (m_queue.empty()) {
        if (m_closing) {
          return;
        }
        ++m_idle;
        m_wake.wait(lock);
        --m_idle;
      }
      const auto [fd, launcher] = m_queue.front();
      m_queue.pop_front();
      lock.unlock();
      serve_call(fd, launcher, m_hooks);
      lock.lock();
      if (--m_open == 0) {
        m_done.notify_all();
      }
    }
  }

  const Hooks m_hooks;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::condition_variable m_done;
  std::deque<std::pair<int, long>> m_queue;
  int m_idle = 0;
  int m_open = 0;
  bool m_closing = false;
};

} // namespace

const char*
command_of(int argc, char* const* argv)
{
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--store") {
      ++i;
    } else if (!argument.starts_with("--store=") && argument != "--utc") {
      return argv[i];
    }
  }
  return nullptr;
}

void
write_cpu_line(const char* label, long long user_us, long long system_us)
{
  const char* path = cpu_log_path();
  if (path == nullptr) {
    return;
  }
  char line[128];
  const int length = std::snprintf(line, sizeof line, "%.32s %lld %lld\n", label, user_us, system_us);
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 && length > 0) {
    (void)!::write(fd, line, static_cast<size_t>(length)); // one short append: whole lines
    ::close(fd);
  }
}

int
serve(const char* name, const Hooks& hooks)
{
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    return 1;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t size = std::strlen(name);
  if (size == 0 || size + 1 > sizeof address.sun_path) {
    return 1;
  }
  std::memcpy(address.sun_path + 1, name, size); // abstract: sun_path[0] is NUL
  const auto address_size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + size);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), address_size) != 0 || ::listen(listener, 128) != 0) {
    ::close(listener);
    return 0; // another recorder has it
  }
  g_own_environment = environ;
  g_null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (g_null < 0) {
    ::close(listener);
    return 1; // no place to park the streams of calls between their turns
  }
  const std::string own_mounts = namespace_of("self", "mnt");
  const std::string own_pids = namespace_of("self", "pid");
  // A hook's stream whose reader is gone (a build tool killed) is an error
  // for that hook, not the end of the recorder.
  std::signal(SIGPIPE, SIG_IGN);
  digest::DigestCache::remember_in_process(true);
  // The links of one build tool run share what they digested
  // (digest/engine.hpp, BuildMemo).
  digest::BuildMemo::enable(true);
  // Calls take turns, so one arena serves them all; and what a call frees
  // (a deflate state, a deps log's buffer) is kept for the next rather than
  // given back and faulted in again: with glibc's defaults each call
  // trimmed its thread's heap (two or three madvise calls) and touched the
  // pages anew. The heap this keeps is bounded by the largest call's.
  ::mallopt(M_ARENA_MAX, 1);
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  const int idle_ms = idle_seconds() * 1000;
  const uid_t self = ::geteuid();
  // Never destroyed: its threads may still be waking to end as this returns.
  static Workers* const workers_of_process = new Workers(hooks);
  Workers& workers = *workers_of_process;
  unsigned long calls = 0;
  while (calls < k_calls_per_recorder) {
    pollfd waiting{listener, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, idle_ms);
    if (ready == 0 && workers.open_calls() == 0) {
      break;
    }
    if (ready <= 0) {
      continue; // idle with calls open, or interrupted
    }
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        ::usleep(10000); // out of descriptors: the calls in flight give some back
      }
      continue;
    }
    // Abstract names are open to every user, and to containers sharing the
    // network namespace: only callers of this user, seeing the same files
    // and processes, are served (the others run the runner themselves).
    ucred peer{};
    socklen_t peer_size = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) != 0 || peer.uid != self || peer.pid <= 0
        || namespace_of(std::to_string(peer.pid), "mnt") != own_mounts
        || namespace_of(std::to_string(peer.pid), "pid") != own_pids || own_mounts.empty()) {
      ::close(fd);
      continue;
    }
    ++calls;
    workers.serve(fd, static_cast<long>(peer.pid));
  }
  ::close(listener); // new hooks start another recorder; the open calls end here
  workers.finish();
  long long user = 0;
  long long system = 0;
  cpu_now(user, system);
  // What no call was charged with: accepting, starting threads, waiting.
  const long long rest = user + system - g_logged_us;
  hooks.log_cpu("recorder", rest > 0 ? rest : 0, 0);
  return 0;
}

} // namespace fingerprint::recorder
