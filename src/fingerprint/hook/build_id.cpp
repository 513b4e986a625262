#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::hook {

namespace {

std::string
env(const char* name)
{
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// The first line of a small file of /proc, in one open, read and close,
// with no stream, buffer or locale set up each time: every hook reads
// several. Empty when it cannot be read.
std::string
read_proc_line(const std::string& path)
{
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return {};
  }
  char buffer[4096]; // /proc/<pid>/stat is at most about 1 KiB: comm has 15 bytes
  ssize_t n = 0;
  do {
    n = ::read(fd.get(), buffer, sizeof(buffer));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    return {};
  }
  std::string_view text(buffer, static_cast<size_t>(n));
  return std::string(text.substr(0, text.find('\n')));
}

// /proc/<pid>/stat: "pid (comm) state ppid pgrp session ... starttime(22nd
// field) ...". comm may hold spaces and parentheses, so parse from the last ')'.
bool
read_process(long pid, ProcessFacts& info)
{
  const std::string text = read_proc_line("/proc/" + std::to_string(pid) + "/stat");
  if (text.empty()) {
    return false;
  }
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || close + 2 > text.size()) {
    return false;
  }
  info = ProcessFacts{};
  info.pid = pid;
  info.name = text.substr(open + 1, close - open - 1);
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int index = 3; fields >> field; ++index) {
    if (index == 4) {
      info.parent = std::strtol(field.c_str(), nullptr, 10);
    } else if (index == 6) {
      info.session = std::strtol(field.c_str(), nullptr, 10);
    } else if (index == 22) {
      info.start = std::strtoull(field.c_str(), nullptr, 10);
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

bool
is_shell(const std::string& name)
{
  return name == "sh" || name == "bash" || name == "dash";
}

// This process and its ancestors, nearest first, up to the nearest ninja
// (find_tool looks no further, and the orphan rule only applies without
// one), else up to init. PID 1 is looked at too: `docker run image ninja`
// makes ninja PID 1.
long g_hook_process = 0; // set_hook_process(); 0: this process

std::vector<ProcessFacts>
read_chain()
{
  std::vector<ProcessFacts> chain(1);
  const long self = hook_process();
  if (!read_process(self, chain[0])) {
    chain[0] = ProcessFacts{};
    chain[0].pid = self;
    chain[0].parent = g_hook_process != 0 ? 0 : ::getppid();
    return chain;
  }
  ProcessFacts info;
  for (long pid = chain[0].parent; chain.size() <= 64 && pid >= 1 && read_process(pid, info); pid = info.parent) {
    chain.push_back(info);
    if (pid == 1 || is_ninja(info.name)) {
      break;
    }
  }
  return chain;
}

bool
is_alive(long pid, unsigned long long start)
{
  ProcessFacts info;
  return read_process(pid, info) && info.start == start; // a reused pid has another start
}

// The kernel's boot id: a start time (clock ticks since boot) and a pid
// name one process only within one boot.
// Read once: a process lives within one boot.
const std::string&
boot_id()
{
  static const std::string id = [] {
    const std::string read = read_proc_line("/proc/sys/kernel/random/boot_id");
    const bool usable = !read.empty() && read.size() <= 64 && std::all_of(read.begin(), read.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
    });
    return usable ? read : std::string("-");
  }();
  return id;
}

// Where in `chain` the invocation is: the nearest ninja; else the outermost
// make of a chain of recursive makes (CMake's Makefiles call make again per
// directory); else the parent process (-1: not even that is known).
struct Tool
{
  long index = -1;
  bool ninja = false;
};

Tool
find_tool(const std::vector<ProcessFacts>& chain)
{
  Tool tool;
  for (size_t i = 1; i < chain.size(); ++i) {
    if (is_ninja(chain[i].name)) {
      return {static_cast<long>(i), true};
    }
    if (is_make(chain[i].name)) {
      tool.index = static_cast<long>(i);
    } else if (tool.index >= 0 && !is_shell(chain[i].name)) {
      break; // past the outermost make
    }
  }
  if (tool.index < 0 && chain.size() > 1) {
    tool.index = 1;
  }
  return tool;
}

// Whether `tool` is a ninja or a make, not the parent taken for want of one.
bool
is_build_tool(const std::vector<ProcessFacts>& chain, const Tool& tool)
{
  return tool.ninja || (tool.index >= 0 && is_make(chain[static_cast<size_t>(tool.index)].name));
}

std::string
identity_of(const std::vector<ProcessFacts>& chain, const Tool& tool)
{
  if (tool.index >= 0) {
    const auto& process = chain[static_cast<size_t>(tool.index)];
    return std::to_string(process.pid) + ":" + std::to_string(process.start);
  }
  return chain.empty() ? "unknown" : std::to_string(chain[0].parent);
}

// The sequence file:
//   <number> <tag> <newest invocation> <boot id>
//   <number> <invocation> <session> <seen>      one per remembered invocation
// The first line is what older runners read (its first three fields). `seen`
// is the start (clock ticks since boot) of the latest hook that found that
// invocation's build tool alive above it.
struct Remembered
{
  unsigned long long number = 0;
  std::string identity; // "<pid>:<start>"
  long session = -1;    // -1: not known (a file written by an older runner)
  unsigned long long seen = 0;

  long pid = 0;
  unsigned long long start = 0;
  bool has_start = false;
};

constexpr size_t k_remembered = 16;

// How far `seen` may lag behind the start of the latest live hook, in clock
// ticks (1 s at the usual USER_HZ of 100). A hook moves it only when it
// started later than seen + k_seen_slack, so the file is rewritten at most
// about once per second of a run rather than by every hook (start times
// move by 10 ms). Every live hook therefore started no later than
// seen + k_seen_slack, and the orphan rule compares against that bound: it
// joins every process the exact `seen` would have joined, and may also join
// one that started up to 1 s after the run's last live hook (still with a
// parent older than the run, in its session, and its tool gone).
constexpr unsigned long long k_seen_slack = 100;

struct Sequence
{
  unsigned long long number = 0;
  std::string tag;
  std::string boot;
  std::vector<Remembered> invocations;
};

Remembered
remembered(unsigned long long number, const std::string& identity, long session, unsigned long long seen)
{
  Remembered entry;
  entry.number = number;
  entry.identity = identity;
  entry.session = session;
  entry.seen = seen;
  const auto colon = identity.find(':');
  if (colon != std::string::npos) {
    char* end = nullptr;
    entry.pid = std::strtol(identity.c_str(), &end, 10);
    entry.has_start = end == identity.c_str() + colon && colon + 1 < identity.size();
    entry.start = std::strtoull(identity.c_str() + colon + 1, &end, 10);
    entry.has_start = entry.has_start && *end == '\0';
  }
  return entry;
}

Sequence
parse_sequence(std::string_view text)
{
  Sequence sequence;
  std::istringstream lines{std::string(text)};
  std::string line;
  std::string newest;
  if (std::getline(lines, line)) {
    std::istringstream fields(line);
    fields >> sequence.number >> sequence.tag >> newest >> sequence.boot;
  }
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    unsigned long long number = 0;
    std::string identity;
    long session = -1;
    unsigned long long seen = 0;
    if (fields >> number >> identity >> session >> seen) {
      sequence.invocations.push_back(remembered(number, identity, session, seen));
    }
  }
  if (sequence.invocations.empty() && !newest.empty()) {
    // An older runner's file: its last invocation keeps its number, as it did there.
    sequence.invocations.push_back(remembered(sequence.number, newest, -1, 0));
  }
  return sequence;
}

std::string
format_sequence(const Sequence& sequence)
{
  std::string newest = "-";
  for (const auto& entry : sequence.invocations) {
    if (entry.number == sequence.number) {
      newest = entry.identity;
    }
  }
  std::string text = std::to_string(sequence.number) + " " + sequence.tag + " " + newest + " " + sequence.boot + "\n";
  for (const auto& entry : sequence.invocations) {
    text += std::to_string(entry.number) + " " + entry.identity + " " + std::to_string(entry.session) + " "
            + std::to_string(entry.seen) + "\n";
  }
  return text;
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
  // Without `create` the caller only reads: an empty file (the file is
  // emptied, never unlinked) has nothing for it, and parallel hooks need not
  // queue on its lock to find that out.
  struct stat st
  {};
  if (!create && ::fstat(fd.get(), &st) == 0 && st.st_size == 0) {
    return util::Fd();
  }
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return make_error(path, "cannot lock: " + util::errno_text(errno));
    }
  }
  return fd;
}

// Replaces the file's `old_size` bytes with `text` in place: the lock is
// on the file itself, so a temporary file renamed over it would leave the
// next hook locking a file that nobody else locks. The new text is written
// over the old one first, padded with newlines (blank lines, which both
// files' readers skip) to the old length, and only then cut to its own
// length: a hook killed in between (Ctrl-C reaches the whole foreground
// group) leaves the new text and some blank lines, never an empty file or
// the tail of the old text. Both files stay well under a page, which the
// kernel writes whole or not at all.
Expected<void>
rewrite(int fd, const std::string& path, const std::string& text, size_t old_size)
{
  if (text.empty()) {
    if (::ftruncate(fd, 0) != 0) {
      return make_error(path, util::errno_text(errno));
    }
    return {};
  }
  std::string padded = text;
  if (padded.size() < old_size) {
    padded.append(old_size - padded.size(), '\n');
  }
  for (size_t done = 0; done < padded.size();) {
    const ssize_t n = ::pwrite(fd, padded.data() + done, padded.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return make_error(path, n < 0 ? util::errno_text(errno) : "cannot write");
    }
    done += static_cast<size_t>(n);
  }
  if (text.size() < old_size && ::ftruncate(fd, static_cast<off_t>(text.size())) != 0) {
    return make_error(path, util::errno_text(errno));
  }
  return {};
}

} // namespace

void
set_hook_process(long pid)
{
  g_hook_process = pid;
}

long
hook_process()
{
  return g_hook_process != 0 ? g_hook_process : ::getpid();
}

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

SequenceStep
step_sequence(std::string_view text,
              const std::vector<ProcessFacts>& chain,
              const std::string& boot,
              const std::function<bool(long, unsigned long long)>& alive,
              const std::function<std::string()>& new_tag)
{
  Sequence sequence = parse_sequence(text);
  if (!util::is_lower_hex(sequence.tag, 8)) {
    // A new tree, or a file garbled by hand (this runner never leaves one
    // empty or torn): numbering starts again at 1 under a new tag, so no
    // id of the old numbering is given out again.
    sequence = Sequence{};
    sequence.tag = new_tag();
  }
  if (sequence.boot.empty()) {
    sequence.boot = boot; // an older runner's file: trusted as before
  } else if (sequence.boot != boot) {
    sequence.invocations.clear(); // pids and start times of another boot
    sequence.boot = boot;
  }
  const Tool tool = find_tool(chain);
  const std::string identity = identity_of(chain, tool);
  const unsigned long long own_start = chain.empty() ? 0 : chain[0].start;

  SequenceStep step;
  step.identity = identity;
  step.tool = is_build_tool(chain, tool);
  const auto render = [&](unsigned long long number) {
    step.build_id = std::to_string(number) + "-" + sequence.tag;
    const std::string updated = format_sequence(sequence);
    if (updated != text) {
      step.text = updated;
    }
    return step;
  };

  for (auto& entry : sequence.invocations) {
    if (entry.identity == identity) {
      if (own_start > entry.seen + k_seen_slack) {
        entry.seen = own_start; // else the file stays as it is: see k_seen_slack
      }
      step.seen = entry.seen;
      return render(entry.number);
    }
  }

  // An orphan: some process P between this one and where the tool was
  // looked for is a child of a process older than a remembered invocation
  // E (init, a subreaper) although P itself started during E's lifetime
  // (after E started, before E's last live hook started: entry.seen, give
  // or take k_seen_slack), in E's session, and E's build tool is gone.
  // Then P's parent was E's tool, or under it, and died. A hook run by
  // hand has a parent older than P only when P is its own shell, which
  // started before E; a tool that is still alive is found, not joined, so
  // a second build running beside it stays apart.
  const Remembered* joined = nullptr;
  if (!tool.ninja && tool.index >= 0) {
    for (size_t j = 0; j <= static_cast<size_t>(tool.index) && j + 1 < chain.size(); ++j) {
      const auto& process = chain[j];
      const auto& parent = chain[j + 1];
      for (const auto& entry : sequence.invocations) {
        if (entry.has_start && entry.session >= 0 && entry.session == process.session && parent.start < entry.start
            && entry.start <= process.start && process.start <= entry.seen + k_seen_slack
            && (joined == nullptr || entry.start > joined->start) && !alive(entry.pid, entry.start)) {
          joined = &entry;
        }
      }
    }
  }
  if (joined != nullptr) {
    step.identity = joined->identity;
    step.tool = false; // its tool is gone
    return render(joined->number);
  }

  ++sequence.number;
  step.seen = own_start;
  const long session = tool.index >= 0 ? chain[static_cast<size_t>(tool.index)].session : -1;
  sequence.invocations.push_back(remembered(sequence.number, identity, session, own_start));
  if (sequence.invocations.size() > k_remembered) {
    sequence.invocations.erase(sequence.invocations.begin());
  }
  return render(sequence.number);
}

namespace {

// What this process found: it belongs to one invocation for its lifetime,
// even once its build tool has gone.
struct Claimed
{
  std::string build_dir;
  std::string build_id;
  std::string identity;
  bool tool = false;
};

std::mutex g_claimed_mutex;
std::optional<Claimed> g_claimed;

// What the sequence file said for a build tool's run, by build tree and
// run: a process that hooks many links of one run (the recorder) reads and
// locks the file again only when the file would change (`seen` due, see
// k_seen_slack). A run's number never changes once given.
struct KnownRun
{
  std::string build_id;
  unsigned long long seen = 0;
};
std::map<std::pair<std::string, std::string>, KnownRun> g_known_runs; // under g_claimed_mutex
constexpr size_t k_known_runs = 64;

} // namespace

ClaimedBuild
claimed_build()
{
  std::lock_guard lock(g_claimed_mutex);
  if (!g_claimed) {
    return {};
  }
  return {true, g_claimed->build_dir, g_claimed->build_id, g_claimed->identity, g_claimed->tool};
}

void
set_claimed_build(const ClaimedBuild& claimed)
{
  std::lock_guard lock(g_claimed_mutex);
  if (claimed.set) {
    g_claimed = Claimed{claimed.build_dir, claimed.build_id, claimed.identity, claimed.tool};
  } else {
    g_claimed.reset();
  }
}

std::string
invocation_identity()
{
  {
    std::lock_guard lock(g_claimed_mutex);
    if (g_claimed) {
      return g_claimed->identity;
    }
  }
  const auto chain = read_chain();
  return identity_of(chain, find_tool(chain));
}

std::string
build_tool_run()
{
  {
    std::lock_guard lock(g_claimed_mutex);
    if (g_claimed) {
      return g_claimed->tool ? g_claimed->identity : std::string();
    }
  }
  const auto chain = read_chain();
  const Tool tool = find_tool(chain);
  return is_build_tool(chain, tool) ? identity_of(chain, tool) : std::string();
}

Expected<std::string>
build_id_from_invocation(const std::string& build_dir)
{
  std::lock_guard lock(g_claimed_mutex);
  if (g_claimed && g_claimed->build_dir == build_dir) {
    return g_claimed->build_id;
  }
  // Only a process that kept a run of this tree looks before the lock: the
  // others read the process tree under it, as it is when the file is read.
  const bool known_tree = std::any_of(
    g_known_runs.begin(), g_known_runs.end(), [&](const auto& entry) { return entry.first.first == build_dir; });
  if (known_tree) {
    const auto chain = read_chain();
    const Tool tool = find_tool(chain);
    if (is_build_tool(chain, tool)) {
      const std::string identity = identity_of(chain, tool);
      const auto known = g_known_runs.find({build_dir, identity});
      if (known != g_known_runs.end() && chain[0].start <= known->second.seen + k_seen_slack) {
        g_claimed = Claimed{build_dir, known->second.build_id, identity, true};
        return known->second.build_id;
      }
    }
  }
  const std::string path = build_dir + "/CMakeFiles/fingerprint/build-sequence";
  auto fd = open_locked(build_dir, "build-sequence", true);
  if (!fd) {
    return fd.error();
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(path, text.error().message);
  }
  const auto new_tag = [] {
    std::random_device random; // only for a tree without a tag: it costs calls of its own
    char tag[16];
    std::snprintf(tag, sizeof(tag), "%08x", static_cast<unsigned>(random()));
    return std::string(tag);
  };
  const auto step = step_sequence(*text, read_chain(), boot_id(), is_alive, new_tag);
  if (!step.text.empty()) {
    if (auto ok = rewrite(fd->get(), path, step.text, text->size()); !ok) {
      return ok.error();
    }
  }
  if (step.tool) {
    if (g_known_runs.size() >= k_known_runs) {
      g_known_runs.clear();
    }
    g_known_runs[{build_dir, step.identity}] = KnownRun{step.build_id, step.seen};
  }
  g_claimed = Claimed{build_dir, step.build_id, step.identity, step.tool};
  return step.build_id;
}

void
claim_build_id(const std::string& build_dir)
{
  try {
    if (build_id_from_environment().empty()) {
      (void)build_id_from_invocation(build_dir);
    }
  } catch (const std::exception&) {
    // build_id_from_invocation is asked again after the link and says why
  }
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
  if (auto ok = rewrite(fd->get(), path, updated, text->size()); !ok) {
    return ok.error();
  }
  return result;
}

} // namespace fingerprint::hook
