#include <fingerprint/digest/engine.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/hook/archive_steps.hpp>
#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/hook/link_inputs.hpp>
#include <fingerprint/hook/ninja_deps.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

namespace fingerprint::hook {

namespace {

namespace fs = std::filesystem;

// A build tree's deps log as this process read it last, with the tree's
// physical path. Kept for the process's life and read on from where it was:
// Ninja appends to the log, and a recompacted log is a new file (a new
// inode), read anew. A runner that hooks one link reads it once anyway; the
// recorder, serving every link of a build, reads each record once
// (docs/ARCHITECTURE.md, "The recorder").
struct KnownDepsLog
{
  std::string build_dir;
  std::string physical_prefix; // the build tree as the kernel names it, with a slash
  dev_t device = 0;
  ino_t inode = 0;
  std::string tail; // the file's last bytes read into the log: a file made anew under a reused inode differs there
  std::shared_ptr<NinjaDepsLog> log;
};

// Up to 64 bytes of `fd` before `end`.
std::string
bytes_before(int fd, size_t end)
{
  std::string bytes(std::min<size_t>(end, 64), '\0');
  const ssize_t n = ::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(end - bytes.size()));
  bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return bytes;
}

// `build_dir` as the kernel names it, with a slash; empty when it cannot
// be resolved.
std::string
physical_prefix_of(const std::string& build_dir)
{
  std::string prefix;
  if (char* real = ::realpath(build_dir.c_str(), nullptr); real != nullptr) {
    prefix = std::string(real) + "/";
    std::free(real);
  }
  return prefix;
}

constexpr size_t k_known_deps_logs = 8; // build trees a recorder keeps; the oldest is dropped
std::mutex g_deps_logs_mutex;
std::list<KnownDepsLog> g_deps_logs; // most recently used first

// The deps log of `build_dir` as it is now, or null when it has none.
std::shared_ptr<NinjaDepsLog>
current_deps_log(const std::string& build_dir, std::string& physical_prefix)
{
  const std::string path = build_dir + "/.ninja_deps";
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st
  {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return nullptr;
  }
  std::lock_guard lock(g_deps_logs_mutex);
  auto known = std::find_if(
    g_deps_logs.begin(), g_deps_logs.end(), [&](const KnownDepsLog& entry) { return entry.build_dir == build_dir; });
  if (known != g_deps_logs.end()) {
    g_deps_logs.splice(g_deps_logs.begin(), g_deps_logs, known);
    KnownDepsLog& entry = g_deps_logs.front();
    const auto size = static_cast<size_t>(st.st_size);
    if (!entry.log->ended() && entry.device == st.st_dev && entry.inode == st.st_ino && size >= entry.log->consumed()
        && bytes_before(fd.get(), entry.log->consumed()) == entry.tail) {
      if (size > entry.log->consumed()) {
        std::string more(size - entry.log->consumed(), '\0');
        const ssize_t n = ::pread(fd.get(), more.data(), more.size(), static_cast<off_t>(entry.log->consumed()));
        more.resize(n > 0 ? static_cast<size_t>(n) : 0);
        entry.log->extend(std::move(more));
        entry.tail = bytes_before(fd.get(), entry.log->consumed());
      }
      physical_prefix = entry.physical_prefix;
      return entry.log;
    }
    g_deps_logs.pop_front(); // another file, or one cut shorter: read anew
  }
  auto bytes = util::read_all(fd.get());
  if (!bytes) {
    return nullptr;
  }
  auto log = NinjaDepsLog::parse(std::move(*bytes));
  if (!log) {
    return nullptr;
  }
  KnownDepsLog entry{build_dir,
                     physical_prefix_of(build_dir),
                     st.st_dev,
                     st.st_ino,
                     bytes_before(fd.get(), log->consumed()),
                     std::make_shared<NinjaDepsLog>(std::move(*log))};
  physical_prefix = entry.physical_prefix;
  g_deps_logs.push_front(std::move(entry));
  if (g_deps_logs.size() > k_known_deps_logs) {
    g_deps_logs.pop_back();
  }
  return g_deps_logs.front().log;
}

// physical_prefix_of(build_dir), as the tree's deps log was read with when
// this process keeps it (a recorder: once, not a realpath() a link).
std::string
known_physical_prefix(const std::string& build_dir)
{
  {
    std::lock_guard lock(g_deps_logs_mutex);
    for (const KnownDepsLog& entry : g_deps_logs) {
      if (entry.build_dir == build_dir && !entry.physical_prefix.empty()) {
        return entry.physical_prefix;
      }
    }
  }
  return physical_prefix_of(build_dir);
}

bool
is_regular_file(const std::string& path)
{
  struct stat st
  {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool
is_object_file(std::string_view path)
{
  return path.ends_with(".o") || path.ends_with(".obj");
}

bool
looks_like_library(std::string_view path)
{
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.ends_with(".a") || name.ends_with(".so") || name.find(".so.") != std::string_view::npos
         || is_object_file(name);
}

// A relative path in a target's settings (a generator expression's value)
// is taken from the target's directory, the same for every generator, not
// from the directory the link happens to run in. No base: left as it is.
void
resolve_relative(std::vector<std::string>& paths, const std::string& base)
{
  if (base.empty()) {
    return;
  }
  for (auto& path : paths) {
    if (!path.starts_with('/')) {
      path = util::absolute_path(base + "/" + path);
    }
  }
}

// A target's name as one file name component.
std::string
safe_name(const std::string& target)
{
  std::string safe = target;
  for (char& c : safe) {
    if (c == '/' || c == '\0') {
      c = '_';
    }
  }
  return safe;
}

} // namespace

std::string
depfile_path(const std::string& build_dir, const std::string& target)
{
  const std::string dir = build_dir + "/CMakeFiles/fingerprint/deps";
  std::error_code ignored;
  fs::create_directories(dir, ignored);
  // The hook's process, not this one: the recorder serves many links at once.
  return dir + "/" + safe_name(target) + "." + std::to_string(hook_process()) + ".d";
}

namespace {

// "\ " -> " ", "\#" -> "#", "$$" -> "$" (lld, mold and make's spelling).
std::string
unescape(std::string_view text)
{
  std::string result;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '#')) {
      result += text[++i];
    } else if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      result += '$';
      ++i;
    } else {
      result += text[i];
    }
  }
  return result;
}

// Splits "a b\ c" at unescaped spaces.
void
split_words(std::string_view text, std::vector<std::string>& out)
{
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i + 1 < text.size() && text[i] == '\\') {
      ++i; // the escaped character; a backslash that ends the text is kept
    } else if (i == text.size() || text[i] == ' ' || text[i] == '\t') {
      if (i > start) {
        out.push_back(unescape(text.substr(start, i - start)));
      }
      start = i + 1;
    }
  }
}

std::string_view
trim(std::string_view text)
{
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    if (text.back() == ' ' && text.size() > 1 && text[text.size() - 2] == '\\') {
      break; // "lib\ " names "lib ": the space is the name's, not padding
    }
    text.remove_suffix(1);
  }
  return text;
}

// A name as a warning can show it: a NUL byte would end the line early.
std::string
printable(std::string_view name)
{
  std::string result;
  for (const char c : name) {
    if (c == '\0') {
      result += "\\0";
    } else {
      result += c;
    }
  }
  return result;
}

} // namespace

std::vector<std::string>
parse_depfile(std::string_view text)
{
  // GNU ld writes one input per continuation line and does not escape
  // spaces ("  /opt/My SDK/lib/libx.a \"); lld also writes one per line,
  // escaping them; mold writes them all on the rule's line. So a
  // continuation line is one path; only inputs on the rule's own line
  // ("out: a b") are split at unescaped spaces. The one rule is followed by
  // a phony rule per input ("in:"), which only repeat the inputs and are
  // not read: GNU ld does not escape them either, so an input named
  // "x: y.a" would read as a rule with the input "y.a:".
  std::vector<std::string> inputs;
  bool in_rule = false;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    line = trim(line);
    const bool continued = line.ends_with('\\') && !line.ends_with("\\\\");
    if (continued) {
      line = trim(line.substr(0, line.size() - 1));
    }
    if (in_rule) {
      if (!line.empty()) {
        inputs.push_back(unescape(line));
      }
    } else if (!line.empty()) {
      in_rule = true;
      if (const size_t colon = line.find(": "); colon != std::string_view::npos) {
        split_words(line.substr(colon + 2), inputs);
      }
    }
    if (in_rule && !continued) {
      break;
    }
  }
  return inputs;
}

std::vector<std::string>
parse_compiler_depfile(std::string_view text)
{
  std::vector<std::string> inputs;
  bool in_rule = false;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    const bool continued = line.ends_with('\\') && !line.ends_with("\\\\");
    if (continued) {
      line.remove_suffix(1);
    }
    if (!in_rule) {
      if (line.find_first_not_of(" \t") == std::string_view::npos) {
        continue;
      }
      in_rule = true;
      // "out: in": the colon that ends the target is followed by a space or
      // the end of the line ("C:\\x" style names have none).
      size_t colon = line.find(": ");
      if (colon == std::string_view::npos && line.ends_with(':')) {
        colon = line.size() - 1;
      }
      line = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    }
    split_words(line, inputs);
    if (!continued) {
      break;
    }
  }
  return inputs;
}

namespace {

// The words of a response file ("@file" on a link line), as CMake writes
// them: separated by white space, a word in double quotes kept whole.
void
read_response_file(const std::string& path, std::vector<std::string>& out)
{
  auto text = util::read_regular_file(path);
  if (!text) {
    return;
  }
  std::string word;
  bool quoted = false;
  bool any = false;
  for (const char c : *text) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      if (any) {
        out.push_back(std::move(word));
      }
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) {
    out.push_back(std::move(word));
  }
}

} // namespace

LinkInputs
collect_link_inputs(const std::vector<std::string>& command,
                    const std::string& depfile,
                    const std::string& output,
                    const std::string& build_dir,
                    bool is_link,
                    const std::function<void(const std::string&)>& on_warning,
                    const digest::BuildMemo* memo)
{
  std::vector<std::string> candidates;
  std::string text;
  // No file is what a linker that ignores the option leaves: the link line
  // is read then, as always. Anything else there is worth a word.
  if (struct stat st{}; !depfile.empty() && ::lstat(depfile.c_str(), &st) == 0) {
    if (auto read = util::read_regular_file(depfile)) {
      text = std::move(*read);
    } else {
      on_warning(read.error().message + " (the linker's dependency file; the link line's inputs are recorded instead)");
    }
  }
  if (!text.empty()) {
    candidates = parse_depfile(text);
  } else {
    std::vector<std::string> words;
    for (size_t i = 1; i < command.size(); ++i) {
      if (command[i].starts_with('@')) {
        read_response_file(command[i].substr(1), words);
      } else {
        words.push_back(command[i]);
      }
    }
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& argument = words[i];
      if (argument == "-o") {
        ++i; // the output
      } else if (!argument.starts_with("-") && (is_link ? looks_like_library(argument) : is_object_file(argument))) {
        candidates.push_back(argument);
      }
    }
  }
  // The build tree as CMake names it, and as the kernel does: paths made
  // absolute from the working directory are physical, a build tree reached
  // through a symbolic link is not.
  const std::string build_prefix = build_dir + "/";
  std::string physical_prefix = known_physical_prefix(build_dir);
  if (physical_prefix.empty()) {
    physical_prefix = build_prefix;
  }
  LinkInputs found;
  std::set<std::string> seen{output};
  for (const auto& candidate : candidates) {
    if (candidate.find('\0') != std::string::npos) {
      on_warning(depfile + ": an input's name holds a NUL byte, skipped: " + printable(candidate));
      continue;
    }
    std::string path = util::absolute_path(candidate);
    // Seen first: a linker's dependency file names libc.so or libgcc_s.so
    // several times, and a name once not a regular file stays skipped.
    if (!seen.insert(path).second || !((memo != nullptr && memo->contains(path)) || is_regular_file(path))) {
      continue;
    }
    const bool in_tree = path.starts_with(build_prefix) || path.starts_with(physical_prefix);
    (is_object_file(path) && in_tree ? found.objects : found.inputs).push_back(std::move(path));
  }
  return found;
}

std::string
archive_steps_path(const std::string& build_dir, const std::string& target, const std::string& output)
{
  return build_dir + k_archive_steps_dir + safe_name(target) + "."
         + util::hex64(archive_steps_hash(output.data(), output.size())) + k_archive_steps_suffix;
}

void
keep_archive_step(const std::string& path, const std::vector<std::string>& command)
{
  const bool members = std::any_of(command.begin() + std::min<size_t>(command.size(), 1),
                                   command.end(),
                                   [](const std::string& word) { return names_archive_members(word.c_str()); });
  if (!members) {
    ::unlink(path.c_str()); // rm, before the archive is made again
    return;
  }
  std::string text;
  for (const auto& word : command) {
    text.append(word.c_str()); // a word ends at its first NUL byte, as exec would take it
    text += '\0';
  }
  text += '\0';
  std::error_code ignored;
  fs::create_directories(path.substr(0, path.rfind('/')), ignored);
  util::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (!fd || !util::write_all(fd.get(), text)) {
    ::unlink(path.c_str()); // half a list would pass for a whole one
  }
}

std::vector<std::vector<std::string>>
take_archive_steps(const std::string& path)
{
  std::vector<std::vector<std::string>> steps;
  auto text = util::read_regular_file(path);
  ::unlink(path.c_str());
  if (!text) {
    return steps;
  }
  std::vector<std::string> step;
  std::string_view rest = *text;
  while (!rest.empty()) {
    const size_t end = rest.find('\0');
    if (end == std::string_view::npos) {
      break; // cut short: not a whole command
    }
    if (end == 0) {
      if (!step.empty()) {
        steps.push_back(std::move(step));
      }
      step.clear();
    } else {
      step.emplace_back(rest.substr(0, end));
    }
    rest.remove_prefix(end + 1);
  }
  return steps;
}

std::string
compile_record_path(const std::string& object)
{
  return object + ".fpdeps";
}

std::vector<std::string>
compile_inputs(const std::vector<std::string>& objects, size_t& missing, const std::string& build_dir)
{
  // A link's objects name the same headers again and again (a hundred
  // system headers each): the first of each is kept where it stays put,
  // and the set holds views of them, not copies in nodes of a tree.
  std::deque<std::string> kept;
  std::unordered_set<std::string_view> seen;
  auto add = [&](std::string path) {
    if (!seen.contains(path)) {
      seen.insert(kept.emplace_back(std::move(path)));
    }
  };
  // Read only when an object has neither of the other records.
  std::shared_ptr<NinjaDepsLog> ninja_deps;
  bool ninja_deps_read = false;
  std::string physical_prefix; // the build tree as the kernel names it
  auto from_ninja_deps = [&](const std::string& object) {
    if (build_dir.empty()) {
      return false;
    }
    if (!ninja_deps_read) {
      ninja_deps_read = true;
      ninja_deps = current_deps_log(build_dir, physical_prefix);
    }
    struct stat st
    {};
    if (!ninja_deps || ::stat(object.c_str(), &st) != 0) {
      return false;
    }
    // Ninja names the objects it builds relative to its build tree, which
    // an object's path made absolute from the working directory may name
    // by its physical path (a build tree behind a symbolic link).
    std::string name = object;
    if (object.starts_with(build_dir + "/")) {
      name = object.substr(build_dir.size() + 1);
    } else if (!physical_prefix.empty() && object.starts_with(physical_prefix)) {
      name = object.substr(physical_prefix.size());
    }
    const auto mtime = ninja_deps->mtime_of(name);
    if (!mtime || *mtime != digest::FileIdentity::from_stat(st).mtime_ns) {
      return false;
    }
    for (const auto& path : ninja_deps->inputs_of(name)) {
      add(util::absolute_path(path.starts_with('/') ? path : build_dir + "/" + path));
    }
    return true;
  };
  missing = 0;
  for (const std::string& object : objects) {
    struct stat object_st
    {};
    struct stat record_st
    {};
    const std::string record = compile_record_path(object);
    if (::stat(object.c_str(), &object_st) == 0 && ::stat(record.c_str(), &record_st) == 0
        && (record_st.st_mtim.tv_sec > object_st.st_mtim.tv_sec
            || (record_st.st_mtim.tv_sec == object_st.st_mtim.tv_sec
                && record_st.st_mtim.tv_nsec >= object_st.st_mtim.tv_nsec))) {
      if (auto text = util::read_regular_file(record)) {
        std::string_view rest = *text;
        while (!rest.empty()) {
          const size_t end = std::min(rest.find('\0'), rest.size());
          if (end > 0 && rest.front() == '/') {
            add(std::string(rest.substr(0, end)));
          }
          rest.remove_prefix(std::min(end + 1, rest.size()));
        }
        continue;
      }
    }
    // Unix Makefiles keep the compiler's own file, written relative to the
    // directory the compile ran in: the target's binary directory, the part
    // of the object's path before /CMakeFiles/.
    const std::string depfile = object + ".d";
    const size_t cmake_files = object.rfind("/CMakeFiles/");
    auto text = util::read_regular_file(depfile);
    if (!text || cmake_files == std::string::npos) {
      if (!from_ninja_deps(object)) {
        ++missing;
      }
      continue;
    }
    const std::string base = object.substr(0, cmake_files);
    for (auto& path : parse_compiler_depfile(*text)) {
      add(util::absolute_path(path.starts_with('/') ? path : base + "/" + path));
    }
  }
  return {std::make_move_iterator(kept.begin()), std::make_move_iterator(kept.end())};
}

Expected<TargetSettings>
load_target_settings(const std::string& dir, const std::string& target, const std::string& output)
{
  TargetSettings settings;
  std::error_code error;
  const fs::path target_dir = fs::path(dir) / target;
  if (!fs::is_directory(target_dir, error)) {
    return settings;
  }
  for (const auto& entry : fs::directory_iterator(target_dir, error)) {
    if (entry.path().extension() != ".args") {
      continue;
    }
    std::ifstream in(entry.path());
    TargetSettings candidate;
    std::string file_output;
    std::string source_dir;
    std::string binary_dir;
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number) {
      if (line.find('\0') != std::string::npos) {
        // No path holds one; a message quoting it would end at it.
        return make_error(entry.path().string() + ":" + std::to_string(number), "a NUL byte: not a settings file");
      }
      if (line.starts_with("output=")) {
        file_output = line.substr(7);
      } else if (line.starts_with("source_dir=")) {
        source_dir = line.substr(11);
      } else if (line.starts_with("binary_dir=")) {
        binary_dir = line.substr(11);
      } else if (line.starts_with("consumes=") && line.size() > 9) {
        candidate.consumes.push_back(line.substr(9));
      } else if (line.starts_with("produces=") && line.size() > 9) {
        candidate.produces.push_back(line.substr(9));
      } else if (line.starts_with("interface=") && line.size() > 10) {
        candidate.interface.push_back(line.substr(10));
      } else if (line.starts_with("config=")) {
        candidate.config = line.substr(7);
      }
    }
    if (util::absolute_path(file_output) == output) {
      resolve_relative(candidate.consumes, source_dir);
      resolve_relative(candidate.produces, binary_dir);
      resolve_relative(candidate.interface, binary_dir);
      return candidate;
    }
  }
  if (error) {
    return make_error(target_dir.string(), error.message());
  }
  return settings;
}

} // namespace fingerprint::hook
