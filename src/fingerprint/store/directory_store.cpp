#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/format.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sched.h>
#include <set>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace detail {

using util::Fd;

// Opens `relative` below the store root for reading; a file that does not
// exist yields an invalid Fd, not an error.
Expected<Fd>
open_below(int root_fd, const std::string& relative, int flags, bool create_parents)
{
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(root_fd, dir, create_parents);
  if (!dir_fd || !dir_fd->valid()) {
    return dir_fd;
  }
  Fd fd(::openat(dir_fd->get(), std::string(name).c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!fd) {
    if (errno == ENOENT && (flags & O_CREAT) == 0) {
      return Fd();
    }
    if (errno == ELOOP) {
      return make_error(relative, "is a symbolic link (not followed inside the store)");
    }
    return make_error(relative, util::errno_text(errno));
  }
  return fd;
}

// Takes flock() on `fd`, retrying on EINTR.
bool
lock(int fd, int operation)
{
  while (::flock(fd, operation) != 0) {
    if (errno != EINTR) {
      return false;
    }
  }
  return true;
}

// After waiting for a lock, the log may have been replaced by a compaction
// (rename over it); appending to the old inode would lose the event.
bool
still_linked(int dir_fd, std::string_view name, int fd)
{
  struct stat by_fd
  {};
  struct stat by_name
  {};
  return ::fstat(fd, &by_fd) == 0 && ::fstatat(dir_fd, std::string(name).c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0
         && by_fd.st_ino == by_name.st_ino && by_fd.st_dev == by_name.st_dev;
}

// Whether a log of `size` bytes ends in a torn line. A live writer's line
// also shows without its newline while the kernel copies it: the size
// grows a page (or folio) at a time, so mid-write it is page-aligned. Such a
// tail is looked at again, after yielding, before it is taken as torn; an
// occasional wrong guess costs an empty line, which readers skip and
// compaction drops.
bool
tail_is_torn(int fd, off_t size)
{
  char last = '\n';
  if (size <= 0 || ::pread(fd, &last, 1, size - 1) != 1 || last == '\n') {
    return false;
  }
  for (int look = 0; look < 3 && size % 4096 == 0; ++look) {
    ::sched_yield();
    struct stat again
    {};
    if (::fstat(fd, &again) != 0 || again.st_size != size) {
      return false;
    }
  }
  return true;
}

// What an appender can see cheaply of a log's health: its last line. A torn
// line or an unreadable last line is worth a warning (the append itself
// goes ahead: it loses nothing). Lines deeper in the log are fsck's to find.
std::optional<std::string>
look_at_tail(int fd, off_t size, bool torn)
{
  if (torn) {
    return "ends in a torn line (a writer died mid-write)";
  }
  constexpr off_t k_window = 32 * 1024;
  if (size <= 1) {
    return std::nullopt;
  }
  const off_t length = std::min(size, k_window);
  std::string tail(static_cast<size_t>(length), '\0');
  if (::pread(fd, tail.data(), tail.size(), size - length) != length) {
    return std::nullopt;
  }
  tail.pop_back(); // its newline
  const size_t start = tail.rfind('\n');
  if (start == std::string::npos && size > k_window) {
    return "ends in a line longer than " + std::to_string(k_window / 1024) + " KiB";
  }
  const std::string_view line = std::string_view(tail).substr(start == std::string::npos ? 0 : start + 1);
  if (line.empty()) {
    return std::nullopt;
  }
  if (auto event = parse_event(line); !event) {
    return "its last line is unreadable (" + event.error().message + ")";
  }
  return std::nullopt;
}

// After a short write on an O_APPEND descriptor, our partial line ends where
// the descriptor's offset now is. Taken back (truncated) when nothing came
// after it, under the exclusive lock; otherwise it stays as one unreadable
// line that readers skip and fsck reports.
std::string
take_back(int fd, ssize_t written)
{
  const off_t end = ::lseek(fd, 0, SEEK_CUR);
  if (written <= 0) {
    return "nothing was appended";
  }
  struct stat st
  {};
  if (end >= written && lock(fd, LOCK_EX) && ::fstat(fd, &st) == 0 && st.st_size == end
      && ::ftruncate(fd, end - written) == 0) {
    return "the partial line was taken back; nothing was appended";
  }
  return "a partial line of " + std::to_string(written) + " bytes remains at byte " + std::to_string(end - written)
         + " (readers skip it; fingerprint fsck --repair removes it)";
}

// Every line the store writes is one flat object that starts with {"v":
// and ends with its only '}'. A line that begins like that (or is a prefix
// of that beginning) and has no '}' is the front of an event whose writer
// died mid-write.
bool
looks_torn(std::string_view line)
{
  constexpr std::string_view k_start = "{\"v\":";
  const bool starts = line.size() < k_start.size() ? k_start.starts_with(line) : line.starts_with(k_start);
  return starts && line.find('}') == std::string_view::npos;
}

void
parse_lines(std::string_view text, const std::string& file, LogContents& out)
{
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      out.torn_tail = true;
      return;
    }
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (line.empty()) {
      continue; // left by a writer that completed a torn line
    }
    if (line.size() > k_max_line_length) {
      out.problems.push_back({file, line_number, "line longer than " + std::to_string(k_max_line_length) + " bytes"});
      continue;
    }
    auto event = parse_event(line);
    if (!event) {
      out.problems.push_back({file, line_number, event.error().message, looks_torn(line)});
      continue;
    }
    out.events.push_back(std::move(*event));
  }
}

std::string
dedupe_key(const Event& event)
{
  Event copy = event;
  copy.time.clear();
  return serialize(copy);
}

Expected<void>
ensure_format_file(int root_fd, const std::string& root)
{
  const std::string path = root + "/" + std::string(k_format_file);
  const std::string name(k_format_file);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Fd fd(::openat(root_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd) {
      auto text = util::read_all(fd.get());
      if (!text) {
        return make_error(path, text.error().message);
      }
      if (auto format = check_format_file(*text, path); !format) {
        return format.error();
      }
      return {};
    }
    if (errno != ENOENT) {
      return make_error(path, util::errno_text(errno));
    }
    // Create it complete under a private name, then link() it into place:
    // of two processes creating a store at once, one wins and both agree.
    // Unique across hosts and containers sharing the store (pids repeat).
    const std::string temp = name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(util::now_ns());
    Fd out(::openat(root_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!out) {
      return make_error(path, util::errno_text(errno));
    }
    auto written = util::write_all(out.get(), make_format_file(util::now_ns()));
    if (!written || ::fsync(out.get()) != 0) {
      ::unlinkat(root_fd, temp.c_str(), 0);
      return make_error(path, written ? util::errno_text(errno) : written.error().message);
    }
    out.reset();
    const int linked = ::linkat(root_fd, temp.c_str(), root_fd, name.c_str(), 0);
    const int link_errno = errno;
    ::unlinkat(root_fd, temp.c_str(), 0);
    if (linked != 0 && link_errno != EEXIST) {
      return make_error(path, util::errno_text(link_errno));
    }
    (void)util::fsync_directory(root_fd);
  }
  return make_error(path, "could not be created");
}

Expected<void>
replace_locked(int root_fd,
               const std::string& relative,
               const std::string& display,
               std::string_view tag,
               bool take_lock,
               const Decide& decide)
{
  const auto [dir, name_view] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(root_fd, dir, false);
  if (!dir_fd) {
    return make_error(display, dir_fd.error().message);
  }
  if (!dir_fd->valid()) {
    return make_error(display, "no such log");
  }
  const std::string name(name_view);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    // Read-write: on NFS flock() is emulated with byte-range locks, and an
    // exclusive one needs a descriptor open for writing.
    Fd fd(::openat(dir_fd->get(), name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
      return make_error(display, errno == ENOENT ? "no such log" : util::errno_text(errno));
    }
    if (take_lock && !lock(fd.get(), LOCK_EX)) {
      return make_error(display, "cannot lock: " + util::errno_text(errno));
    }
    if (!still_linked(dir_fd->get(), name, fd.get())) {
      continue; // another rewrite got there first
    }
    auto text = util::read_all(fd.get());
    if (!text) {
      return make_error(display, text.error().message);
    }
    auto decided = decide(LockedLog{dir_fd->get(), name, fd.get(), *text});
    if (!decided) {
      return decided.error();
    }
    if (decided->action == Replacement::Action::keep) {
      return {};
    }
    if (!take_lock) {
      return make_error(display, "not rewritten without its lock");
    }
    if (decided->action == Replacement::Action::remove) {
      // Under the lock: an appender waiting for it finds the name gone and
      // starts a new log, so nothing appended meanwhile is lost.
      if (::unlinkat(dir_fd->get(), name.c_str(), 0) != 0) {
        return make_error(display, "cannot remove: " + util::errno_text(errno));
      }
      if (auto synced = util::fsync_directory(dir_fd->get()); !synced) {
        return make_error(display, synced.error().message);
      }
      return {};
    }
    const std::string temp = name + "." + std::string(tag) + "." + std::to_string(::getpid());
    Fd out(::openat(dir_fd->get(), temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!out) {
      return make_error(display, "cannot create a temporary file: " + util::errno_text(errno));
    }
    // Another user's rewrite must not close a shared log to the group.
    if (auto access = util::copy_access(fd.get(), out.get()); !access) {
      ::unlinkat(dir_fd->get(), temp.c_str(), 0);
      return make_error(display, "cannot give the rewritten log the old one's mode: " + access.error().message);
    }
    auto written = util::write_all(out.get(), decided->text);
    if (!written || ::fsync(out.get()) != 0) {
      const std::string why = written ? util::errno_text(errno) : written.error().message;
      ::unlinkat(dir_fd->get(), temp.c_str(), 0);
      return make_error(display, "cannot write the rewritten log: " + why);
    }
    if (::renameat(dir_fd->get(), temp.c_str(), dir_fd->get(), name.c_str()) != 0) {
      const std::string why = util::errno_text(errno);
      ::unlinkat(dir_fd->get(), temp.c_str(), 0);
      return make_error(display, "cannot replace the log: " + why);
    }
    if (auto synced = util::fsync_directory(dir_fd->get()); !synced) {
      return make_error(display, synced.error().message);
    }
    return {}; // the lock on the old inode goes with `fd`
  }
  return make_error(display, "log kept being replaced while rewriting it");
}

} // namespace detail

using namespace detail;

DirectoryStore::DirectoryStore(std::string root, Fd root_fd)
  : m_root(std::move(root))
  , m_root_fd(std::move(root_fd))
{
}

Expected<DirectoryStore>
DirectoryStore::open_for_reading(const std::string& root)
{
  Fd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) {
      return DirectoryStore(root, Fd());
    }
    return make_error(root, util::errno_text(errno));
  }
  const std::string format_path = root + "/" + std::string(k_format_file);
  Fd format(::openat(fd.get(), std::string(k_format_file).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!format) {
    if (errno != ENOENT) {
      return make_error(format_path, util::errno_text(errno));
    }
    // An empty directory is a store nobody has written to yet.
    return DirectoryStore(root, Fd());
  }
  auto text = util::read_all(format.get());
  if (!text) {
    return make_error(format_path, text.error().message);
  }
  if (auto version = check_format_file(*text, format_path); !version) {
    return version.error();
  }
  return DirectoryStore(root, std::move(fd));
}

Expected<DirectoryStore>
DirectoryStore::open_for_writing(const std::string& root)
{
  auto fd = util::open_directory(root, true);
  if (!fd) {
    return make_error("cannot open the store", fd.error().message);
  }
  if (auto ok = ensure_format_file(fd->get(), root); !ok) {
    return ok.error();
  }
  return DirectoryStore(root, std::move(*fd));
}

std::string
DirectoryStore::encode_component(std::string_view text)
{
  static constexpr char k_digits[] = "0123456789ABCDEF";
  std::string result;
  result.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
                       || c == '-' || c == '+' || (c == '.' && i > 0);
    if (plain) {
      result += static_cast<char>(c);
    } else {
      result += '%';
      result += k_digits[c >> 4];
      result += k_digits[c & 0xf];
    }
  }
  return result.empty() ? "%" : result;
}

std::string
DirectoryStore::decode_component(std::string_view text)
{
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  };
  std::string result;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && nibble(text[i + 1]) >= 0 && nibble(text[i + 2]) >= 0) {
      result += static_cast<char>(nibble(text[i + 1]) * 16 + nibble(text[i + 2]));
      i += 2;
    } else if (text != "%") { // "%" alone stands for the empty string
      result += text[i];
    }
  }
  return result;
}

Expected<void>
DirectoryStore::append_line(const std::string& relative_path, const std::string& lines, Warnings* warnings) const
{
  const std::string full = m_root + "/" + relative_path;
  const auto [dir, name] = util::split_last(relative_path);
  auto dir_fd = util::open_directory_beneath(m_root_fd.get(), dir, true);
  if (!dir_fd) {
    return make_error(full, dir_fd.error().message);
  }
  const std::string file_name(name);
  // Bounded: each retry means a compaction replaced the log meanwhile.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    Fd fd(::openat(
      dir_fd->get(), file_name.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666));
    if (!fd) {
      const char* why = errno == ELOOP ? "is a symbolic link (not followed inside the store)" : nullptr;
      return make_error(full, why != nullptr ? why : util::errno_text(errno));
    }
    if (!lock(fd.get(), LOCK_SH)) {
      return make_error(full, "cannot lock: " + util::errno_text(errno));
    }
    if (!still_linked(dir_fd->get(), file_name, fd.get())) {
      continue;
    }
    struct stat st
    {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return make_error(full, "not a regular file");
    }
    // A writer that died mid-line left no newline; start on a fresh line so
    // that only the torn line is lost, not this one too.
    std::string buffer;
    const bool torn = tail_is_torn(fd.get(), st.st_size);
    if (torn) {
      buffer += '\n';
    }
    buffer += lines;
    buffer += '\n';
    if (warnings != nullptr) {
      if (auto problem = look_at_tail(fd.get(), st.st_size, torn)) {
        warnings->push_back(full + ": " + *problem
                            + "; the new event was appended after it (run: fingerprint fsck --repair)");
      }
    }
    // A file-size limit would cut the line short: refuse before writing.
    struct rlimit limit
    {};
    if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
        && static_cast<rlim_t>(st.st_size) + buffer.size() > limit.rlim_cur) {
      return make_error(full, "appending would exceed the file size limit (ulimit -f); nothing was appended");
    }
    // One write() of whole lines: O_APPEND makes them land contiguously
    // after every other complete line, whatever other writers do.
    const ssize_t written = ::write(fd.get(), buffer.data(), buffer.size());
    if (written < 0) {
      return make_error(full, util::errno_text(errno) + "; nothing was appended");
    }
    if (static_cast<size_t>(written) != buffer.size()) {
      return make_error(
        full, "short write (no space left on the device, or a file size limit): " + take_back(fd.get(), written));
    }
    return {};
  }
  return make_error(full, "log kept being replaced while appending");
}

Expected<void>
DirectoryStore::append(const std::vector<Event>& events, Warnings* warnings) const
{
  if (!m_root_fd) {
    return make_error(m_root, "store not opened for writing");
  }
  // One write() per log: a build step's events for one artifact, and all of
  // them for its build's index, land together (a link that consumed 20
  // libraries appends to 21 logs, not 40 times).
  std::vector<std::pair<std::string, std::string>> batches;
  std::map<std::string, size_t> batch_of;
  auto add = [&](std::string path, const std::string& line) {
    auto [it, inserted] = batch_of.try_emplace(std::move(path), batches.size());
    if (inserted) {
      batches.emplace_back(it->first, std::string());
    }
    auto& text = batches[it->second].second;
    if (!text.empty()) {
      text += '\n';
    }
    text += line;
  };
  for (const Event& event : events) {
    auto key = parse_digest_key(event.digest);
    if (!key) {
      return key.error();
    }
    const std::string project = encode_component(event.project);
    const std::string build = encode_component(event.build) + ".jsonl";
    // Checked before anything is written, so that a name the filesystem
    // refuses cannot leave an event in one log and not in the other.
    for (const std::string* component : {&project, &build}) {
      if (component->size() > NAME_MAX) {
        return make_error(m_root,
                          "project name or build id too long for a file name (" + std::to_string(component->size())
                            + " bytes encoded, at most " + std::to_string(NAME_MAX) + ")");
      }
    }
    auto line = serialize_for_storing(event);
    if (!line) {
      return make_error(m_root, line.error().message + "; nothing was recorded");
    }
    add(key->log_path(), *line);
    add("builds/" + project + "/" + build, *line);
  }
  for (const auto& [path, text] : batches) {
    if (auto ok = append_line(path, text, warnings); !ok) {
      return ok;
    }
  }
  return {};
}

Expected<void>
DirectoryStore::append_link(const DigestKey& log, const Event& event, Warnings* warnings) const
{
  if (!m_root_fd) {
    return make_error(m_root, "store not opened for writing");
  }
  auto line = serialize_for_storing(event);
  if (!line) {
    return make_error(m_root, line.error().message + "; nothing was recorded");
  }
  return append_line(log.log_path(), *line, warnings);
}

Expected<std::string>
DirectoryStore::read_raw_log(const DigestKey& key) const
{
  if (!m_root_fd) {
    return std::string();
  }
  auto fd = open_below(m_root_fd.get(), key.log_path(), O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return make_error(m_root + "/" + key.log_path(), fd.error().message);
  }
  if (!fd->valid()) {
    return std::string();
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(m_root + "/" + key.log_path(), text.error().message);
  }
  return text;
}

Expected<LogContents>
DirectoryStore::read_file(const std::string& relative_path) const
{
  LogContents contents;
  if (!m_root_fd) {
    return contents;
  }
  auto fd = open_below(m_root_fd.get(), relative_path, O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return make_error(m_root + "/" + relative_path, fd.error().message);
  }
  if (!fd->valid()) {
    return contents;
  }
  struct stat st
  {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(m_root + "/" + relative_path, "not a regular file");
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(m_root + "/" + relative_path, text.error().message);
  }
  parse_lines(*text, relative_path, contents);
  return contents;
}

Expected<LogContents>
DirectoryStore::read_log(const DigestKey& key) const
{
  return read_file(key.log_path());
}

namespace {

// Calls `each(dir_fd, name)` for the entries of directory `name` under
// `parent`; `relative` names it in messages. A directory that is missing or
// a symbolic link lists as empty (fsck reports strays; queries skip them).
template <typename Each>
Expected<void>
list_entries(const std::string& root, int parent, const std::string& name, const std::string& relative, Each&& each)
{
  Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
      return {};
    }
    return make_error(root + "/" + relative, util::errno_text(errno));
  }
  const int dir_fd = fd.get();
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd.release()), ::closedir);
  if (!dir) {
    return make_error(root + "/" + relative, util::errno_text(errno));
  }
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view entry_name = entry->d_name;
    if (entry_name != "." && entry_name != "..") {
      each(dir_fd, entry_name);
    }
  }
  return {};
}

} // namespace

Expected<std::vector<DigestKey>>
DirectoryStore::list_logs() const
{
  std::vector<DigestKey> logs;
  if (!m_root_fd) {
    return logs;
  }
  Expected<void> inner_ok;
  auto keep_first_error = [&](Expected<void> listed) {
    if (!listed && inner_ok) {
      inner_ok = std::move(listed);
    }
  };
  auto ok =
    list_entries(m_root, m_root_fd.get(), "objects", "objects", [&](int objects_fd, std::string_view algorithm) {
      const std::string algorithm_dir = "objects/" + std::string(algorithm);
      keep_first_error(list_entries(
        m_root, objects_fd, std::string(algorithm), algorithm_dir, [&](int algorithm_fd, std::string_view shard) {
          keep_first_error(list_entries(
            m_root,
            algorithm_fd,
            std::string(shard),
            algorithm_dir + "/" + std::string(shard),
            [&](int, std::string_view file) {
              constexpr std::string_view suffix = ".jsonl";
              if (!file.ends_with(suffix)) {
                return;
              }
              auto key = parse_digest_key(std::string(algorithm) + ":"
                                          + std::string(file.substr(0, file.size() - suffix.size())));
              if (key && key->log_path() == algorithm_dir + "/" + std::string(shard) + "/" + std::string(file)) {
                logs.push_back(std::move(*key));
              }
            }));
        }));
    });
  if (!ok) {
    return ok.error();
  }
  if (!inner_ok) {
    return inner_ok.error();
  }
  std::sort(logs.begin(), logs.end(), [](const DigestKey& a, const DigestKey& b) { return a.str() < b.str(); });
  return logs;
}

Expected<std::vector<BuildRef>>
DirectoryStore::list_builds() const
{
  std::vector<BuildRef> builds;
  if (!m_root_fd) {
    return builds;
  }
  auto list_dir = [&](int parent, const std::string& name, const std::string& relative, auto&& each) {
    return list_entries(m_root, parent, name, relative, each);
  };
  Expected<void> inner_ok;
  auto ok = list_dir(m_root_fd.get(), "builds", "builds", [&](int builds_fd, std::string_view project) {
    const std::string name(project);
    auto listed = list_dir(builds_fd, name, "builds/" + name, [&](int, std::string_view file) {
      constexpr std::string_view suffix = ".jsonl";
      if (file.size() > suffix.size() && file.ends_with(suffix)) {
        builds.push_back({decode_component(project), decode_component(file.substr(0, file.size() - suffix.size()))});
      }
    });
    if (!listed && inner_ok) {
      inner_ok = listed;
    }
  });
  if (!ok) {
    return ok.error();
  }
  if (!inner_ok) {
    return inner_ok.error();
  }
  std::sort(builds.begin(), builds.end(), [](const BuildRef& a, const BuildRef& b) {
    return std::tie(a.project, a.build) < std::tie(b.project, b.build);
  });
  return builds;
}

Expected<LogContents>
DirectoryStore::read_build(const BuildRef& build) const
{
  return read_file("builds/" + encode_component(build.project) + "/" + encode_component(build.build) + ".jsonl");
}

Expected<CompactionResult>
DirectoryStore::rewrite(const std::string& relative, const Rewriter& transform, const RewriteOptions& options) const
{
  const std::string full = m_root + "/" + relative;
  if (!m_root_fd) {
    return make_error(full, "no such log");
  }
  CompactionResult result;
  auto done = detail::replace_locked(
    m_root_fd.get(),
    relative,
    full,
    "compact",
    !options.dry_run,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      LogContents contents;
      parse_lines(log.text, relative, contents);
      if (!contents.problems.empty() || contents.torn_tail) {
        return make_error(
          full,
          "has unreadable lines; rewriting would drop them, so it is left as it is (run: fingerprint fsck --repair)");
      }
      result.events_before = contents.events.size();
      const std::vector<Event> kept = transform(contents.events);
      result.events_after = kept.size();
      result.removed = kept.empty() && options.remove_if_empty;
      detail::Replacement replacement;
      if (options.dry_run || (result.events_after == result.events_before && !options.rewrite_always)) {
        return replacement;
      }
      if (result.removed) {
        replacement.action = detail::Replacement::Action::remove;
        return replacement;
      }
      replacement.action = detail::Replacement::Action::replace;
      for (const Event& event : kept) {
        replacement.text += serialize(event);
        replacement.text += '\n';
      }
      return replacement;
    });
  if (!done) {
    return done.error();
  }
  return result;
}

Expected<CompactionResult>
DirectoryStore::compact(const DigestKey& key, bool rewrite_always) const
{
  RewriteOptions options;
  options.rewrite_always = rewrite_always;
  return rewrite(
    key.log_path(),
    [](const std::vector<Event>& events) {
      std::set<std::string> seen;
      std::vector<Event> kept;
      for (const Event& event : events) {
        if (seen.insert(dedupe_key(event)).second) {
          kept.push_back(event);
        }
      }
      return kept;
    },
    options);
}

Expected<CompactionResult>
DirectoryStore::remove_events(const DigestKey& key, const EventFilter& drop, bool dry_run) const
{
  return remove_events_from(key.log_path(), drop, dry_run);
}

Expected<CompactionResult>
DirectoryStore::remove_build_events(const BuildRef& build, const EventFilter& drop, bool dry_run) const
{
  return remove_events_from(
    "builds/" + encode_component(build.project) + "/" + encode_component(build.build) + ".jsonl", drop, dry_run);
}

Expected<CompactionResult>
DirectoryStore::remove_events_from(const std::string& relative, const EventFilter& drop, bool dry_run) const
{
  RewriteOptions options;
  options.dry_run = dry_run;
  options.remove_if_empty = true;
  return rewrite(
    relative,
    [&](const std::vector<Event>& events) {
      std::vector<Event> kept;
      for (const Event& event : events) {
        if (!drop(event)) {
          kept.push_back(event);
        }
      }
      return kept;
    },
    options);
}

} // namespace fingerprint::store
