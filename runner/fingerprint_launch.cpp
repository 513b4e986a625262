// fingerprint-launch: the link hook's first process, built without a C
// library (x86-64 Linux system calls, no start-up code beyond _start), so
// that a hooked link does not pay a C library's start for it: on the
// project's KVM guest, glibc's start alone costs 0.7 ms of CPU, most of it
// probing the CPU with cpuid, against 0.05 ms for a program without it
// (docs/ARCHITECTURE.md, "A hooked link, counted on its own").
//
//   fingerprint-launch RUNNER [RUNNER'S OPTIONS] launch OPTIONS -- COMMAND...
//
// It hands the call to the recorder serving RUNNER (runner/recorder.cpp: one
// resident runner process that serves the calls in turn), runs
// the command that recorder gives it as its own child, so the link keeps the
// build tool's process group, descriptors and environment, and exits as
// the recorder says. Where no recorder answers, it becomes RUNNER with the
// same arguments (today's hook) and asks it to start one. An archive's
// steps before its last (rm, ar) it does alone: it keeps what the last step
// needs and execs them (hook/archive_steps.hpp).

#include <fingerprint/hook/archive_steps.hpp>

#include "recorder_protocol.hpp"
#include <stddef.h>
#include <stdint.h>

namespace {

using namespace fingerprint::recorder;

// ---- system calls ----------------------------------------------------------

long
sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0)
{
  long result;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
}

constexpr long k_read = 0, k_write = 1, k_close = 3, k_mmap = 9, k_mkdir = 83, k_unlink = 87, k_socket = 41,
               k_connect = 42, k_sendto = 44, k_sendmsg = 46, k_getsockopt = 55, k_execve = 59, k_exit_group = 231,
               k_wait4 = 61, k_umask = 95, k_getrusage = 98, k_getuid = 102, k_openat = 257, k_newfstatat = 262;
constexpr long k_eintr = 4, k_enoent = 2, k_enomem = 12, k_eacces = 13, k_enotdir = 20, k_enoexec = 8, k_enodev = 19,
               k_estale = 116, k_etimedout = 110, k_econnrefused = 111;
constexpr long k_at_fdcwd = -100;
constexpr long k_o_cloexec = 02000000, k_o_directory = 0200000, k_o_path = 010000000, k_o_wronly = 01, k_o_creat = 0100,
               k_o_append = 02000, k_o_nofollow = 0400000;
constexpr long k_af_unix = 1, k_sock_stream = 1, k_sock_cloexec = 02000000;
constexpr long k_sol_socket = 1, k_so_peercred = 17, k_scm_rights = 1, k_msg_nosignal = 0x4000;

[[noreturn]] void
exit_with(long code)
{
  sys(k_exit_group, code);
  __builtin_unreachable();
}

// ---- memory and text -------------------------------------------------------

size_t
length(const char* text)
{
  size_t n = 0;
  while (text[n] != '\0') {
    ++n;
  }
  return n;
}

bool
same(const char* a, const char* b)
{
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

bool
starts_with(const char* text, const char* prefix)
{
  while (*prefix != '\0') {
    if (*text++ != *prefix++) {
      return false;
    }
  }
  return true;
}

// Anonymous memory, never given back: the process lives for one link.
void*
allocate(size_t size)
{
  const long address =
    sys(k_mmap, 0, static_cast<long>(size ? size : 1), 3 /* read, write */, 0x22 /* private, anonymous */, -1, 0);
  if (address < 0 && address > -4096) {
    return nullptr;
  }
  return reinterpret_cast<void*>(address);
}

// `number` in decimal at line[n], as far as `size` - 2 allows.
void
put_number(char* line, size_t& n, size_t size, long number)
{
  char digits[24];
  size_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + number % 10);
    number /= 10;
  } while (number > 0);
  while (d > 0 && n + 2 < size) {
    line[n++] = digits[--d];
  }
}

// A message on standard error, in one write.
void
say(const char* a, const char* b = "", const char* c = "", long number = -1)
{
  char line[1024];
  size_t n = 0;
  auto add = [&](const char* text) {
    while (*text != '\0' && n + 2 < sizeof line) {
      line[n++] = *text++;
    }
  };
  add("fingerprint-launch: ");
  add(a);
  add(b);
  add(c);
  if (number >= 0) {
    put_number(line, n, sizeof line, number);
  }
  line[n++] = '\n';
  sys(k_write, 2, reinterpret_cast<long>(line), static_cast<long>(n));
}

bool
read_all(int fd, void* data, size_t size)
{
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const long n = sys(k_read, fd, reinterpret_cast<long>(p), static_cast<long>(size));
    if (n == -k_eintr) {
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

// ---- the kernel's structures (x86-64) ---------------------------------------

struct IoVec
{
  const void* base;
  size_t size;
};

struct MsgHeader
{
  void* name;
  uint32_t name_size;
  IoVec* iov;
  size_t iov_count;
  void* control;
  size_t control_size;
  int flags;
};

struct SockAddrUnix
{
  uint16_t family;
  char path[108];
};

struct Credentials
{
  int32_t pid;
  uint32_t uid;
  uint32_t gid;
};

struct Stat
{
  uint64_t dev, ino, nlink;
  uint32_t mode, uid, gid, pad0;
  uint64_t rdev;
  int64_t size, blksize, blocks;
  int64_t atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns;
  int64_t reserved[3];
};

// ---- running programs -------------------------------------------------------

const char*
find_variable(char** env, const char* name)
{
  const size_t n = length(name);
  for (; *env != nullptr; ++env) {
    if (starts_with(*env, name) && (*env)[n] == '=') {
      return *env + n + 1;
    }
  }
  return nullptr;
}

// $FINGERPRINT_CPU_LOG: this process's own CPU, "launcher USER SYSTEM" in
// microseconds, appended as the runner and the recorder append theirs
// (runner/main.cpp), so that a build's hooks are counted whole
// (tests/bench/hooks_overhead.sh). Called before it exits or execs a tool;
// not before it becomes the runner, whose line counts this process's CPU
// from its start, the launcher's part included.
void
log_cpu(char** env)
{
  const char* path = find_variable(env, "FINGERPRINT_CPU_LOG");
  if (path == nullptr || *path == '\0') {
    return;
  }
  struct
  {
    int64_t user_seconds, user_micros, system_seconds, system_micros;
    int64_t rest[14];
  } usage{}; // struct rusage
  if (sys(k_getrusage, 0 /* RUSAGE_SELF: without the link it waited for */, reinterpret_cast<long>(&usage)) != 0) {
    return;
  }
  char line[64] = "launcher ";
  size_t n = length(line);
  put_number(line, n, sizeof line, static_cast<long>(usage.user_seconds * 1'000'000 + usage.user_micros));
  line[n++] = ' ';
  put_number(line, n, sizeof line, static_cast<long>(usage.system_seconds * 1'000'000 + usage.system_micros));
  line[n++] = '\n';
  const long fd =
    sys(k_openat, k_at_fdcwd, reinterpret_cast<long>(path), k_o_wronly | k_o_creat | k_o_append | k_o_cloexec, 0644);
  if (fd >= 0) {
    sys(k_write, fd, reinterpret_cast<long>(line), static_cast<long>(n)); // one short append: a whole line
    sys(k_close, fd);
  }
}

// execve, and as execvp does for a file without a #! line or ELF header
// (ENOEXEC): the file run by /bin/sh.
long
exec_file(const char* path, char** argv, char** env)
{
  const long error =
    sys(k_execve, reinterpret_cast<long>(path), reinterpret_cast<long>(argv), reinterpret_cast<long>(env));
  if (error != -k_enoexec) {
    return error;
  }
  size_t count = 0;
  while (argv[count] != nullptr) {
    ++count;
  }
  char** script = static_cast<char**>(allocate((count + 2) * sizeof(char*)));
  if (script == nullptr) {
    return error;
  }
  script[0] = const_cast<char*>("/bin/sh");
  script[1] = const_cast<char*>(path);
  for (size_t i = 1; i <= count; ++i) {
    script[i + 1] = argv[i];
  }
  sys(k_execve, reinterpret_cast<long>("/bin/sh"), reinterpret_cast<long>(script), reinterpret_cast<long>(env));
  return error;
}

// execvp's search: a name with a slash as it is, else each entry of $PATH
// (glibc's default "/bin:/usr/bin" without one), going on past the errors
// execvp goes on past. Returns only when every try failed, with the error
// to report.
long
exec_searching(char** argv, char** env)
{
  const char* name = argv[0];
  for (const char* p = name; *p != '\0'; ++p) {
    if (*p == '/') {
      return exec_file(name, argv, env);
    }
  }
  const char* path = find_variable(env, "PATH");
  if (path == nullptr) {
    path = "/bin:/usr/bin";
  }
  const size_t name_size = length(name);
  long error = -k_enoent;
  bool denied = false;
  while (true) {
    const char* end = path;
    while (*end != '\0' && *end != ':') {
      ++end;
    }
    char full[4096];
    const size_t dir_size = static_cast<size_t>(end - path);
    if (dir_size + name_size + 2 <= sizeof full) {
      size_t n = 0;
      for (const char* p = path; p < end; ++p) {
        full[n++] = *p;
      }
      if (n > 0) {
        full[n++] = '/';
      }
      for (size_t i = 0; i <= name_size; ++i) {
        full[n++] = name[i];
      }
      error = exec_file(full, argv, env);
      if (error == -k_eacces) {
        denied = true;
      } else if (error != -k_enoent && error != -k_enotdir && error != -k_estale && error != -k_enodev
                 && error != -k_etimedout) {
        return error;
      }
    }
    if (*end == '\0') {
      break;
    }
    path = end + 1;
  }
  return denied ? -k_eacces : error;
}

[[noreturn]] void
exec_or_die(char** argv, char** env)
{
  const long error = exec_searching(argv, env);
  say("cannot run ", argv[0], ": error ", -error);
  exit_with(127);
}

// The child of spawn(), on its own stack until it execs.
struct SpawnRequest
{
  char** argv;
  char** env;
};

extern "C" [[noreturn]] __attribute__((used)) void
fingerprint_launch_spawned(void* request)
{
  const auto* spawned = static_cast<const SpawnRequest*>(request);
  exec_or_die(spawned->argv, spawned->env);
}

// clone(flags, stack, 0, 0, 0); the child calls fingerprint_launch_spawned(request)
// on `stack` (its top) and never returns. In assembly: the child must not
// return into a frame of the parent's stack.
extern "C" long fingerprint_launch_clone(long flags, void* stack, void* request);
__asm__(".text\n"
        ".global fingerprint_launch_clone\n"
        "fingerprint_launch_clone:\n"
        "  and $-16, %rsi\n"
        "  sub $16, %rsi\n"
        "  mov %rdx, (%rsi)\n" // the request, for the child
        "  xor %edx, %edx\n"
        "  xor %r10d, %r10d\n"
        "  xor %r8d, %r8d\n"
        "  mov $56, %eax\n" // clone
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  xor %ebp, %ebp\n"
        "  pop %rdi\n"
        "  pop %rax\n" // back to a 16-byte boundary before the call
        "  call fingerprint_launch_spawned\n"
        "  hlt\n"
        "1:\n"
        "  ret\n");

// The command as this process's child (its pid, or -errno), started as
// posix_spawn does: the child shares this process's memory, on a stack of
// its own, and this process waits in the kernel until it has exec'd (or
// exited). A fork would copy this process's page tables only for the exec
// to tear them down: 0.2 ms of this process's CPU and 0.3 ms of the
// child's on a KVM guest with slow page-table work (docs/ARCHITECTURE.md,
// "The link's start without a fork"). This process sets no signal handler,
// so nothing but the child runs on the shared memory before the exec.
long
spawn(char** argv, char** env)
{
  constexpr size_t stack_size = 64 * 1024; // exec_searching's 4 KiB path and say()'s line, with room
  void* stack = allocate(stack_size);
  if (stack == nullptr) {
    return -k_enomem;
  }
  SpawnRequest request{argv, env};
  constexpr long clone_vm = 0x100, clone_vfork = 0x4000, sigchld = 17;
  return fingerprint_launch_clone(clone_vm | clone_vfork | sigchld, static_cast<char*>(stack) + stack_size, &request);
}

// Today's hook: the runner itself, with the same arguments; `start` (a
// recorder's name, or null) added to its environment so it starts one.
[[noreturn]] void
become_runner(char** argv, char** env, const char* start)
{
  char** new_env = env;
  if (start != nullptr) {
    size_t count = 0;
    while (env[count] != nullptr) {
      ++count;
    }
    new_env = static_cast<char**>(allocate((count + 2) * sizeof(char*)));
    const size_t variable_size = sizeof k_start_variable - 1;
    const size_t value_size = length(start);
    char* variable = static_cast<char*>(allocate(variable_size + value_size + 2));
    if (new_env == nullptr || variable == nullptr) {
      new_env = env;
    } else {
      size_t n = 0;
      for (size_t i = 0; i < variable_size; ++i) {
        variable[n++] = k_start_variable[i];
      }
      variable[n++] = '=';
      for (size_t i = 0; i <= value_size; ++i) {
        variable[n++] = start[i];
      }
      new_env[0] = variable;
      for (size_t i = 0; i <= count; ++i) {
        new_env[i + 1] = env[i];
      }
    }
  }
  const long error =
    sys(k_execve, reinterpret_cast<long>(argv[0]), reinterpret_cast<long>(argv), reinterpret_cast<long>(new_env));
  say("cannot run the fingerprint runner ", argv[0], ": error ", -error);
  exit_with(127);
}

// A reply's strings as an argv (allocated; null when the reply is bad).
char**
reply_argv(char* strings, uint32_t bytes, uint32_t argc)
{
  if (argc == 0) {
    return nullptr;
  }
  char** argv = static_cast<char**>(allocate((argc + 1ULL) * sizeof(char*)));
  if (argv == nullptr) {
    return nullptr;
  }
  uint32_t found = 0;
  uint32_t start = 0;
  for (uint32_t i = 0; i < bytes && found < argc; ++i) {
    if (strings[i] == '\0') {
      argv[found++] = strings + start;
      start = i + 1;
    }
  }
  if (found != argc) {
    return nullptr;
  }
  argv[argc] = nullptr;
  return argv;
}

bool
read_reply(int fd, Reply& reply, char**& argv)
{
  if (!read_all(fd, &reply, sizeof reply) || reply.bytes > (1U << 30)) {
    return false;
  }
  argv = nullptr;
  if (reply.action == k_exec || reply.action == k_run) {
    char* strings = static_cast<char*>(allocate(reply.bytes));
    if (strings == nullptr || !read_all(fd, strings, reply.bytes)) {
      return false;
    }
    argv = reply_argv(strings, reply.bytes, reply.argc);
    return argv != nullptr;
  }
  return reply.action == k_exit || reply.action == k_fallback;
}

// The recorder's name for this runner: its path, device, inode, size and
// modification time hashed, with the user id in front.
bool
recorder_name(const char* runner, uint32_t uid, SockAddrUnix& address, uint32_t& address_size)
{
  Stat st{};
  if (sys(k_newfstatat, k_at_fdcwd, reinterpret_cast<long>(runner), reinterpret_cast<long>(&st), 0) != 0) {
    return false;
  }
  uint64_t hash = fnv1a(k_fnv_basis, runner, length(runner));
  const int64_t identity[] = {
    static_cast<int64_t>(st.dev), static_cast<int64_t>(st.ino), st.size, st.mtime, st.mtime_ns};
  hash = fnv1a(hash, identity, sizeof identity);
  address.family = static_cast<uint16_t>(k_af_unix);
  size_t n = 0;
  address.path[n++] = '\0';
  for (const char* p = k_name_prefix; *p != '\0'; ++p) {
    address.path[n++] = *p;
  }
  char digits[12];
  size_t d = 0;
  uint32_t value = uid;
  do {
    digits[d++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (d > 0) {
    address.path[n++] = digits[--d];
  }
  address.path[n++] = '-';
  for (int shift = 60; shift >= 0; shift -= 4) {
    address.path[n++] = "0123456789abcdef"[(hash >> shift) & 15];
  }
  address_size = static_cast<uint32_t>(sizeof(uint16_t) + n);
  return true;
}

// Sends the request: the header with the four descriptors, then every
// string (argv from the runner on, then the environment), gathered.
bool
send_request(int fd, int argc, char** argv, char** env, int cwd)
{
  Request request{};
  request.magic = k_magic;
  const long mask = sys(k_umask, 022);
  sys(k_umask, mask);
  request.umask = static_cast<uint32_t>(mask);
  request.argc = static_cast<uint32_t>(argc - 1);
  uint64_t bytes = 0;
  for (int i = 1; i < argc; ++i) {
    bytes += length(argv[i]) + 1;
  }
  uint32_t envc = 0;
  for (; env[envc] != nullptr; ++envc) {
    bytes += length(env[envc]) + 1;
  }
  if (bytes > (1U << 30)) {
    return false;
  }
  request.envc = envc;
  request.bytes = static_cast<uint32_t>(bytes);

  alignas(8) char control[64] = {};
  // struct cmsghdr: size_t len; int level; int type; then the data.
  const int fds[k_request_fds] = {0, 1, 2, cwd};
  const size_t data_size = sizeof fds;
  const size_t header_size = sizeof(size_t) + 2 * sizeof(int);
  *reinterpret_cast<size_t*>(control) = header_size + data_size;
  *reinterpret_cast<int*>(control + sizeof(size_t)) = static_cast<int>(k_sol_socket);
  *reinterpret_cast<int*>(control + sizeof(size_t) + sizeof(int)) = static_cast<int>(k_scm_rights);
  for (size_t i = 0; i < k_request_fds; ++i) {
    reinterpret_cast<int*>(control + header_size)[i] = fds[i];
  }
  IoVec head{&request, sizeof request};
  MsgHeader message{};
  message.iov = &head;
  message.iov_count = 1;
  message.control = control;
  message.control_size = (header_size + data_size + 7) & ~size_t{7};
  long sent = 0;
  do {
    sent = sys(k_sendmsg, fd, reinterpret_cast<long>(&message), k_msg_nosignal);
  } while (sent == -k_eintr);
  if (sent != static_cast<long>(sizeof request)) {
    return false;
  }

  // The strings, up to 512 of them a call.
  IoVec parts[512];
  size_t count = 0;
  auto flush = [&]() {
    size_t first = 0;
    while (first < count) {
      MsgHeader batch{};
      batch.iov = parts + first;
      batch.iov_count = count - first;
      const long n = sys(k_sendmsg, fd, reinterpret_cast<long>(&batch), k_msg_nosignal);
      if (n == -k_eintr) {
        continue;
      }
      if (n <= 0) {
        return false;
      }
      // Skip what was sent; a part sent in part is resumed.
      size_t left = static_cast<size_t>(n);
      while (first < count && left >= parts[first].size) {
        left -= parts[first].size;
        ++first;
      }
      if (left > 0) {
        parts[first].base = static_cast<const char*>(parts[first].base) + left;
        parts[first].size -= left;
      }
    }
    count = 0;
    return true;
  };
  auto add = [&](const char* text) {
    parts[count++] = IoVec{text, length(text) + 1};
    return count < 512 || flush();
  };
  for (int i = 1; i < argc; ++i) {
    if (!add(argv[i])) {
      return false;
    }
  }
  for (uint32_t i = 0; i < envc; ++i) {
    if (!add(env[i])) {
      return false;
    }
  }
  return flush();
}

bool
required(int argc, char** argv)
{
  for (int i = 1; i < argc && !same(argv[i], "--"); ++i) {
    if (same(argv[i], "--required")) {
      return true;
    }
  }
  return false;
}

// ---- an archive's steps before its last ------------------------------------

// The launch options an archive's steps need, and the command after `--`.
struct LaunchOptions
{
  const char* target = nullptr;
  const char* output = nullptr;
  const char* build_dir = nullptr;
  const char* type = nullptr;
  const char* record_after = nullptr;
  char** command = nullptr;
};

// `--name VALUE` and `--name=VALUE` after `launch` (the runner's own
// options come before it), up to `--`.
LaunchOptions
launch_options(int argc, char** argv)
{
  LaunchOptions options;
  struct
  {
    const char* name;
    const char** value;
  } wanted[] = {{"--target", &options.target},
                {"--output", &options.output},
                {"--build-dir", &options.build_dir},
                {"--type", &options.type},
                {"--record-after", &options.record_after}};
  int i = 2;
  while (i < argc && !same(argv[i], "launch")) {
    ++i;
  }
  for (++i; i < argc; ++i) {
    if (same(argv[i], "--")) {
      options.command = argv[i + 1] != nullptr ? argv + i + 1 : nullptr;
      break;
    }
    for (auto& option : wanted) {
      const size_t n = length(option.name);
      if (same(argv[i], option.name) && i + 1 < argc) {
        *option.value = argv[++i];
        break;
      }
      if (starts_with(argv[i], option.name) && argv[i][n] == '=') {
        *option.value = argv[i] + n + 1;
        break;
      }
    }
  }
  return options;
}

const char*
base_name(const char* path)
{
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p) {
    if (*p == '/') {
      base = p + 1;
    }
  }
  return base;
}

// Whether the command runs `tool`, anywhere in it (it may sit behind
// another launcher), as the runner's plan_launch decides the final step.
bool
runs(char** command, const char* tool)
{
  for (char** word = command; *word != nullptr; ++word) {
    if (same(*word, tool) || ((*word)[0] != '-' && same(base_name(*word), base_name(tool)))) {
      return true;
    }
  }
  return false;
}

// A step of an archive before its last (rm, ar): nothing is recorded after
// it, so no recorder is asked and no runner started. An archive's (not a
// link's: --type) step that names members appends its command for the last
// step, any other removes what an earlier build left
// (hook/archive_steps.hpp, which the runner reads); then the step is exec'd.
[[noreturn]] void
archive_step(const LaunchOptions& options, char** env)
{
  const char* type = options.type != nullptr ? options.type : "EXECUTABLE";
  if (!same(type, "EXECUTABLE") && !same(type, "SHARED_LIBRARY") && !same(type, "MODULE_LIBRARY")) {
    using namespace fingerprint::hook;
    const size_t dir_size = length(options.build_dir);
    const size_t target_size = length(options.target);
    char* path = static_cast<char*>(
      allocate(dir_size + sizeof k_archive_steps_dir + target_size + 18 + sizeof k_archive_steps_suffix));
    bool members = false;
    size_t bytes = 1;
    for (char** word = options.command; *word != nullptr; ++word) {
      members = members || (word != options.command && names_archive_members(*word));
      bytes += length(*word) + 1;
    }
    char* text = members ? static_cast<char*>(allocate(bytes)) : nullptr;
    if (path == nullptr || (members && text == nullptr)) {
      say("out of memory");
      exit_with(127);
    }
    size_t n = 0;
    auto add = [&](const char* part) {
      while (*part != '\0') {
        path[n++] = *part++;
      }
    };
    add(options.build_dir);
    const size_t dir_end = n;
    add(k_archive_steps_dir);
    const size_t deps_end = n - 1;
    for (const char* p = options.target; *p != '\0'; ++p) {
      path[n++] = *p == '/' ? '_' : *p;
    }
    path[n++] = '.';
    const uint64_t hash = archive_steps_hash(options.output, length(options.output));
    for (int shift = 60; shift >= 0; shift -= 4) {
      path[n++] = "0123456789abcdef"[(hash >> shift) & 15];
    }
    add(k_archive_steps_suffix);
    path[n] = '\0';
    if (!members) {
      sys(k_unlink, reinterpret_cast<long>(path)); // rm, before the archive is made again
    } else {
      size_t t = 0;
      for (char** word = options.command; *word != nullptr; ++word) {
        for (const char* p = *word; *p != '\0'; ++p) {
          text[t++] = *p;
        }
        text[t++] = '\0';
      }
      text[t++] = '\0';
      const long flags = k_o_wronly | k_o_creat | k_o_append | k_o_cloexec | k_o_nofollow;
      long fd = sys(k_openat, k_at_fdcwd, reinterpret_cast<long>(path), flags, 0666);
      if (fd == -k_enoent) {
        // A new build tree: CMakeFiles/fingerprint/deps, each level made.
        for (size_t at = dir_end + 1; at <= deps_end; ++at) {
          if (path[at] == '/') {
            path[at] = '\0';
            sys(k_mkdir, reinterpret_cast<long>(path), 0777);
            path[at] = '/';
          }
        }
        fd = sys(k_openat, k_at_fdcwd, reinterpret_cast<long>(path), flags, 0666);
      }
      bool written = fd >= 0;
      for (size_t done = 0; written && done < t;) {
        const long w = sys(k_write, fd, reinterpret_cast<long>(text + done), static_cast<long>(t - done));
        if (w == -k_eintr) {
          continue;
        }
        written = w > 0;
        done += written ? static_cast<size_t>(w) : 0;
      }
      if (fd >= 0) {
        sys(k_close, fd);
      }
      if (!written) {
        sys(k_unlink, reinterpret_cast<long>(path)); // half a list would pass for a whole one
        say("cannot keep the archive's member list in ", path, " (what its objects' compiles read goes unrecorded)");
      }
    }
  }
  log_cpu(env);
  exec_or_die(options.command, env);
}

[[noreturn]] void
launch(int argc, char** argv, char** env)
{
  if (argc < 3) {
    say("usage: fingerprint-launch RUNNER [options] launch OPTIONS -- COMMAND...");
    exit_with(2);
  }
  // An archive's steps before its last are the launcher's alone.
  const LaunchOptions options = launch_options(argc, argv);
  if (options.record_after != nullptr && options.command != nullptr && options.target != nullptr
      && options.output != nullptr && options.build_dir != nullptr && !runs(options.command, options.record_after)) {
    archive_step(options, env);
  }
  char** runner_argv = argv + 1;
  // $FINGERPRINT_RECORDER=off: this hook runs the runner, as without a recorder.
  if (const char* wanted = find_variable(env, "FINGERPRINT_RECORDER");
      wanted != nullptr && (same(wanted, "off") || same(wanted, "0") || same(wanted, "OFF"))) {
    become_runner(runner_argv, env, nullptr);
  }
  const uint32_t uid = static_cast<uint32_t>(sys(k_getuid));
  SockAddrUnix address{};
  uint32_t address_size = 0;
  if (!recorder_name(argv[1], uid, address, address_size)) {
    become_runner(runner_argv, env, nullptr); // it says what is wrong with it
  }
  const long fd = sys(k_socket, k_af_unix, k_sock_stream | k_sock_cloexec, 0);
  if (fd < 0) {
    become_runner(runner_argv, env, nullptr);
  }
  long connected = 0;
  do {
    connected = sys(k_connect, fd, reinterpret_cast<long>(&address), address_size);
  } while (connected == -k_eintr);
  if (connected != 0) {
    sys(k_close, fd);
    // Nobody listens under that name: the runner records and starts a recorder.
    become_runner(runner_argv, env, connected == -k_econnrefused ? address.path + 1 : nullptr);
  }
  // Abstract names belong to no one: the recorder must be this user's.
  Credentials peer{};
  uint32_t peer_size = sizeof peer;
  if (sys(k_getsockopt,
          fd,
          k_sol_socket,
          k_so_peercred,
          reinterpret_cast<long>(&peer),
          reinterpret_cast<long>(&peer_size))
        != 0
      || peer.uid != uid) {
    sys(k_close, fd);
    become_runner(runner_argv, env, nullptr);
  }
  const long cwd = sys(k_openat, k_at_fdcwd, reinterpret_cast<long>("."), k_o_path | k_o_directory | k_o_cloexec);
  Reply reply{};
  char** command = nullptr;
  if (cwd < 0 || !send_request(static_cast<int>(fd), argc, argv, env, static_cast<int>(cwd))
      || !read_reply(static_cast<int>(fd), reply, command)) {
    // Nothing has run yet: today's hook does it all.
    sys(k_close, fd);
    become_runner(runner_argv, env, nullptr);
  }
  sys(k_close, cwd);
  switch (reply.action) {
    case k_exit:
      log_cpu(env);
      exit_with(reply.value);
    case k_fallback:
      sys(k_close, fd);
      become_runner(runner_argv, env, nullptr);
    case k_exec:
      sys(k_close, fd);
      log_cpu(env);
      exec_or_die(command, env);
    default:
      break;
  }
  // k_run: the link, as this process's child.
  const long child = spawn(command, env);
  Status status{127};
  if (child < 0) {
    say("cannot start ", command[0], ": error ", -child);
  } else {
    int wait_status = 0;
    long waited = 0;
    do {
      waited = sys(k_wait4, child, reinterpret_cast<long>(&wait_status), 0, 0);
    } while (waited == -k_eintr);
    if (waited == child) {
      const int signal = wait_status & 0x7f;
      status.status = static_cast<uint32_t>(signal == 0 ? (wait_status >> 8) & 0xff : 128 + signal);
    }
  }
  // MSG_NOSIGNAL: a recorder gone during the link is an answer, not SIGPIPE.
  if (sys(k_sendto, fd, reinterpret_cast<long>(&status), sizeof status, k_msg_nosignal, 0, 0)
        != static_cast<long>(sizeof status)
      || !read_reply(static_cast<int>(fd), reply, command) || reply.action != k_exit) {
    // The recorder went away with the link done: say so, and fail the step
    // only where it would have failed (the link's own status, --required).
    say("not fingerprinted: the recorder ended before it recorded this link (rebuild the target to record it)");
    log_cpu(env);
    exit_with(status.status != 0 ? status.status : (required(argc, argv) ? 1 : 0));
  }
  log_cpu(env);
  exit_with(reply.value);
}

} // namespace

// What the compiler may call for copies and zeroing, without a C library.
extern "C" __attribute__((used)) void*
memcpy(void* to, const void* from, size_t size)
{
  auto* t = static_cast<char*>(to);
  const auto* f = static_cast<const char*>(from);
  while (size-- > 0) {
    *t++ = *f++;
  }
  return to;
}

extern "C" __attribute__((used)) void*
memset(void* to, int value, size_t size)
{
  auto* t = static_cast<unsigned char*>(to);
  while (size-- > 0) {
    *t++ = static_cast<unsigned char>(value);
  }
  return to;
}

extern "C" [[noreturn]] void
fingerprint_launch_main(long* stack)
{
  const int argc = static_cast<int>(stack[0]);
  char** argv = reinterpret_cast<char**>(stack + 1);
  char** env = argv + argc + 1;
  launch(argc, argv, env);
}

__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call fingerprint_launch_main\n"
        "  hlt\n");
