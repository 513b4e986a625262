#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace fingerprint::hook {

namespace {

std::string
env(const char* name)
{
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

struct ProcessInfo
{
  std::string name;
  long parent = 0;
  std::string start_time;
};

// /proc/<pid>/stat: "pid (comm) state ppid ... starttime(22nd field) ...".
// comm may hold spaces and parentheses, so parse from the last ')'.
bool
read_process(long pid, ProcessInfo& info)
{
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) {
    return false;
  }
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return false;
  }
  info.name = text.substr(open + 1, close - open - 1);
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int index = 3; fields >> field; ++index) {
    if (index == 4) {
      info.parent = std::strtol(field.c_str(), nullptr, 10);
    } else if (index == 22) {
      info.start_time = field;
      return true;
    }
  }
  return false;
}

bool
is_ninja(const std::string& name)
{
  return name == "ninja" || name == "ninja-build" || name == "samu";
}

bool
is_make(const std::string& name)
{
  return name == "make" || name == "gmake";
}

// <build_dir>/CMakeFiles/fingerprint/<name>, opened and locked; without
// `create`, a missing file yields an Fd that is not valid. The file is never
// unlinked, so the lock always guards the file that path names.
Expected<util::Fd>
open_locked(const std::string& build_dir, const char* name, bool create)
{
  const std::string dir_path = build_dir + "/CMakeFiles/fingerprint";
  const std::string path = dir_path + "/" + name;
  auto dir = util::open_directory(dir_path, create);
  if (!dir && !create) {
    return util::Fd();
  }
  if (!dir) {
    return dir.error();
  }
  util::Fd fd(::openat(dir->get(), name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0666));
  if (!fd) {
    if (errno == ENOENT && !create) {
      return util::Fd();
    }
    return make_error(path, util::errno_text(errno));
  }
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return make_error(path, "cannot lock: " + util::errno_text(errno));
    }
  }
  return fd;
}

Expected<void>
rewrite(int fd, const std::string& path, const std::string& text)
{
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
    return make_error(path, util::errno_text(errno));
  }
  if (auto ok = util::write_all(fd, text); !ok) {
    return make_error(path, ok.error().message);
  }
  return {};
}

} // namespace

std::string
build_id_from_environment()
{
  if (auto id = env("FINGERPRINT_BUILD_ID"); !id.empty()) {
    return id;
  }
  if (auto id = env("GITHUB_RUN_ID"); !id.empty()) {
    const auto attempt = env("GITHUB_RUN_ATTEMPT");
    return "github-" + id + (attempt.empty() ? "" : "." + attempt);
  }
  if (auto id = env("CI_PIPELINE_ID"); !id.empty()) {
    return "gitlab-" + id;
  }
  if (auto id = env("BUILD_TAG"); !id.empty()) {
    return id; // Jenkins: jenkins-<job>-<number>
  }
  if (auto id = env("BUILDKITE_BUILD_ID"); !id.empty()) {
    return "buildkite-" + id;
  }
  return {};
}

std::string
build_id_from_time()
{
  std::string stamp = util::format_rfc3339(util::now_ns());
  std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
  return stamp + "-" + std::to_string(::getpid());
}

std::string
invocation_identity()
{
  // The nearest ninja; else the outermost make of a chain of recursive
  // makes (CMake's Makefiles call make again per directory); else the
  // parent process.
  long pid = ::getppid();
  std::string found;
  ProcessInfo info;
  // PID 1 is looked at too: `docker run image ninja` makes ninja PID 1.
  for (int depth = 0; depth < 64 && pid >= 1 && read_process(pid, info); ++depth) {
    if (is_ninja(info.name)) {
      return std::to_string(pid) + ":" + info.start_time;
    }
    if (is_make(info.name)) {
      found = std::to_string(pid) + ":" + info.start_time;
    } else if (!found.empty() && info.name != "sh" && info.name != "bash" && info.name != "dash") {
      break; // past the outermost make
    }
    if (pid == 1) {
      break;
    }
    pid = info.parent;
  }
  if (!found.empty()) {
    return found;
  }
  if (read_process(::getppid(), info)) {
    return std::to_string(::getppid()) + ":" + info.start_time;
  }
  return std::to_string(::getppid());
}

Expected<std::string>
build_id_from_invocation(const std::string& build_dir)
{
  const std::string path = build_dir + "/CMakeFiles/fingerprint/build-sequence";
  auto fd = open_locked(build_dir, "build-sequence", true);
  if (!fd) {
    return fd.error();
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(path, text.error().message);
  }
  // "<number> <tag> <invocation>\n"
  std::istringstream fields(*text);
  unsigned long long number = 0;
  std::string tag;
  std::string last_invocation;
  fields >> number >> tag >> last_invocation;
  if (!util::is_lower_hex(tag, 8)) {
    std::random_device random;
    char buffer[16];
    std::snprintf(buffer, sizeof(buffer), "%08x", static_cast<unsigned>(random()));
    tag = buffer;
    number = 0;
  }
  const std::string invocation = invocation_identity();
  if (invocation != last_invocation || number == 0) {
    ++number;
    if (auto ok = rewrite(fd->get(), path, std::to_string(number) + " " + tag + " " + invocation + "\n"); !ok) {
      return ok.error();
    }
  }
  return std::to_string(number) + "-" + tag;
}

Expected<Unrecorded>
note_unrecorded(const std::string& build_dir, const std::string& build_id, bool failed)
{
  const std::string path = build_dir + "/CMakeFiles/fingerprint/unrecorded";
  auto fd = open_locked(build_dir, "unrecorded", failed);
  if (!fd) {
    return fd.error();
  }
  if (!fd->valid()) {
    return Unrecorded{};
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(path, text.error().message);
  }
  if (!failed && text->empty()) {
    return Unrecorded{}; // nothing counted: spare a hook that recorded the walk up the process tree
  }
  // "<invocation> <count> <build id>\n"; empty once reported.
  std::istringstream fields(*text);
  std::string last_invocation;
  unsigned long long count = 0;
  std::string build;
  fields >> last_invocation >> count >> std::ws;
  std::getline(fields, build);
  Unrecorded result;
  const std::string invocation = invocation_identity();
  if (!last_invocation.empty() && last_invocation == invocation) {
    result.first = count == 0;
    if (!failed) {
      return result;
    }
    ++count;
  } else {
    result.count = count;
    result.build = build;
    count = failed ? 1 : 0;
  }
  const std::string updated = count == 0 ? "" : invocation + " " + std::to_string(count) + " " + build_id + "\n";
  if (auto ok = rewrite(fd->get(), path, updated); !ok) {
    return ok.error();
  }
  return result;
}

} // namespace fingerprint::hook
