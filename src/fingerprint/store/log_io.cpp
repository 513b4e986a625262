// The directory store's file primitives: opening beneath the root, locks,
// the one locked rewrite, and reading lines back (log_io.hpp).

#include <fingerprint/store/format.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fingerprint::store::detail {

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

namespace {

// The fields of the line of `file` (an /etc/passwd or /etc/group) whose
// field `key_field` is `key`.
std::vector<std::string>
account_entry(const char* file, size_t key_field, const std::string& key)
{
  Fd fd(::open(file, O_RDONLY | O_CLOEXEC));
  auto text = fd ? util::read_all(fd.get()) : Expected<std::string>(std::string());
  std::string_view rest = text ? std::string_view(*text) : std::string_view();
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    std::vector<std::string> fields;
    for (size_t at = 0;;) {
      const size_t colon = line.find(':', at);
      fields.emplace_back(line.substr(at, colon == std::string_view::npos ? std::string_view::npos : colon - at));
      if (colon == std::string_view::npos) {
        break;
      }
      at = colon + 1;
    }
    if (fields.size() > key_field && fields[key_field] == key) {
      return fields;
    }
  }
  return {};
}

// Whether the account database's files name `uid` a member of `gid` (its
// primary group, or listed in the group). Read from /etc/passwd and
// /etc/group directly, once per process and pair: the runner is static, and
// NSS modules (LDAP) are not for it to load; a member known only there
// counts through the file's group instead.
bool
in_group(uid_t uid, gid_t gid)
{
  static std::map<std::pair<uid_t, gid_t>, bool> known;
  if (auto it = known.find({uid, gid}); it != known.end()) {
    return it->second;
  }
  bool member = false;
  const auto user = account_entry("/etc/passwd", 2, std::to_string(uid));
  if (user.size() > 3) {
    member = user[3] == std::to_string(gid);
    const auto group = account_entry("/etc/group", 2, std::to_string(gid));
    for (size_t at = 0; !member && group.size() > 3 && at <= group[3].size();) {
      const size_t comma = std::min(group[3].find(',', at), group[3].size());
      member = group[3].compare(at, comma - at, user[0]) == 0 && comma - at == user[0].size();
      at = comma + 1;
    }
  }
  known[{uid, gid}] = member;
  return member;
}

} // namespace

std::optional<std::string>
refused_file(int root_fd, const struct stat& st)
{
  if (S_ISREG(st.st_mode) && st.st_nlink != 1) {
    return "has " + std::to_string(st.st_nlink)
           + " hard links: refused, since a write would also land in a file outside the store";
  }
  struct stat root
  {};
  static const uid_t self = ::geteuid(); // asked for every log a call appends to
  if (st.st_uid == self || st.st_uid == 0 || ::fstat(root_fd, &root) != 0 || st.st_uid == root.st_uid) {
    return std::nullopt;
  }
  // Of a group-shared store, every member's files have its group (its
  // setgid directories give it), and only members can give it; a member's
  // own group is theirs where default ACLs share the store instead. A store
  // anyone may write to is everyone's.
  if (st.st_gid == root.st_gid || (root.st_mode & S_IWOTH) != 0 || in_group(st.st_uid, root.st_gid)) {
    return std::nullopt;
  }
  return "is owned by user " + std::to_string(st.st_uid) + " and group " + std::to_string(st.st_gid)
         + ", neither of them the store's (user " + std::to_string(root.st_uid) + ", group "
         + std::to_string(root.st_gid) + "): refused";
}

Fd
change_lock(int root_fd, int operation)
{
  return lock_file(root_fd, layout::k_change_lock, operation);
}

Fd
lock_file(int root_fd, std::string_view lock_name, int operation, bool create)
{
  const std::string name(lock_name);
  // Read-write where allowed (an exclusive flock() on NFS needs it); a
  // lock file another user made without group write still locks read-only.
  Fd fd(::openat(root_fd, name.c_str(), O_RDWR | (create ? O_CREAT : 0) | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!fd) {
    fd = Fd(::openat(root_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!fd || !lock(fd.get(), operation)) {
    return Fd();
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
still_linked(int dir_fd, std::string_view name, int fd, struct stat* fd_stat)
{
  struct stat own
  {};
  struct stat& by_fd = fd_stat != nullptr ? *fd_stat : own;
  struct stat by_name
  {};
  return ::fstat(fd, &by_fd) == 0 && ::fstatat(dir_fd, std::string(name).c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0
         && by_fd.st_ino == by_name.st_ino && by_fd.st_dev == by_name.st_dev;
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

namespace {

// Raises an older store's format file (open as `fd`, holding `text`) to the
// current format, whole or not at all: a new file under a private name,
// fsync'ed, renamed over the old one, the directory fsync'ed. Two writers
// upgrading at once both rename a format-2 file into place.
Expected<void>
upgrade_format(int root_fd, const std::string& path, int fd, const std::string& text)
{
  const std::string name(k_format_file);
  const std::string temp = layout::temp_name(name, layout::TempTag::create);
  Fd out(::openat(root_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  auto failed = [&](const std::string& why) {
    if (out) {
      ::unlinkat(root_fd, temp.c_str(), 0);
    }
    return make_error(path, "cannot upgrade the store to format " + std::to_string(k_current_format) + ": " + why);
  };
  if (!out) {
    return failed(util::errno_text(errno));
  }
  // A group-shared store's format file stays readable to the group.
  if (auto access = util::copy_access(fd, out.get()); !access) {
    return failed(access.error().message);
  }
  auto written = util::write_all(out.get(), upgrade_format_file(text, util::now_ns()));
  if (!written) {
    return failed(written.error().message);
  }
  if (::fsync(out.get()) != 0) {
    return failed(util::errno_text(errno));
  }
  if (::renameat(root_fd, temp.c_str(), root_fd, name.c_str()) != 0) {
    return failed(util::errno_text(errno));
  }
  out.reset();
  if (auto synced = util::fsync_directory(root_fd); !synced) {
    return make_error(path, synced.error().message);
  }
  return {};
}

} // namespace

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
      auto format = check_format_file(*text, path);
      if (!format) {
        return format.error();
      }
      if (*format < k_current_format) {
        return upgrade_format(root_fd, path, fd.get(), *text);
      }
      return {};
    }
    if (errno != ENOENT) {
      return make_error(path, util::errno_text(errno));
    }
    // Create it complete under a private name, then link() it into place:
    // of two processes creating a store at once, one wins and both agree.
    const std::string temp = layout::temp_name(name, layout::TempTag::create);
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
               layout::TempTag tag,
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
    // exclusive one needs a descriptor open for writing. Without the lock
    // (a dry run), read only: a store this user may only read is counted too.
    Fd fd(::openat(dir_fd->get(), name.c_str(), (take_lock ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
      return make_error(display, errno == ENOENT ? "no such log" : util::errno_text(errno));
    }
    if (take_lock && !lock(fd.get(), LOCK_EX)) {
      return make_error(display, "cannot lock: " + util::errno_text(errno));
    }
    if (!still_linked(dir_fd->get(), name, fd.get())) {
      continue; // another rewrite got there first
    }
    // A repair replaces such a file by a new one (the rename drops the
    // store's link to it), so it alone goes ahead.
    struct stat st
    {};
    const std::optional<std::string> refused =
      take_lock && ::fstat(fd.get(), &st) == 0 ? refused_file(root_fd, st) : std::nullopt;
    if (refused && tag != layout::TempTag::repair) {
      return make_error(display, *refused + " (run: fingerprint fsck --repair)");
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
    const std::string temp = layout::temp_name(name, tag);
    Fd out(::openat(dir_fd->get(), temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!out) {
      return make_error(display, "cannot create a temporary file: " + util::errno_text(errno));
    }
    // Another user's rewrite must not close a shared log to the group; a
    // refused file's mode and group are an outside file's, not the store's
    // (the new one gets what the store's directories give).
    if (auto access = refused ? Expected<void>() : util::copy_access(fd.get(), out.get()); !access) {
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

Expected<HeldLog>
hold_log(int root_fd, const std::string& relative, const std::string& display)
{
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(root_fd, dir, true);
  if (!dir_fd) {
    return make_error(display, dir_fd.error().message);
  }
  HeldLog held{std::move(*dir_fd), Fd(), std::string(name)};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    Fd fd(::openat(held.dir.get(), held.name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666));
    if (!fd) {
      return make_error(
        display, errno == ELOOP ? "is a symbolic link (not followed inside the store)" : util::errno_text(errno));
    }
    if (!lock(fd.get(), LOCK_EX)) {
      return make_error(display, "cannot lock: " + util::errno_text(errno));
    }
    if (!still_linked(held.dir.get(), held.name, fd.get())) {
      continue;
    }
    struct stat st
    {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return make_error(display, "not a regular file");
    }
    if (auto refused = refused_file(root_fd, st)) {
      return make_error(display, *refused + " (run: fingerprint fsck --repair)");
    }
    held.fd = std::move(fd);
    return held;
  }
  return make_error(display, "log kept being replaced while locking it");
}

void
remove_held_if_empty(const HeldLog& log)
{
  struct stat st
  {};
  if (still_linked(log.dir.get(), log.name, log.fd.get()) && ::fstat(log.fd.get(), &st) == 0 && st.st_size == 0) {
    ::unlinkat(log.dir.get(), log.name.c_str(), 0);
    (void)util::fsync_directory(log.dir.get());
  }
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
  // A line is rarely longer than a kilobyte: a small window first, the
  // whole one only when it holds no line break (every append looks here).
  std::string tail;
  size_t start = std::string::npos;
  for (const off_t window : {off_t{4096}, k_window}) {
    const off_t length = std::min(size, window);
    tail.resize(static_cast<size_t>(length));
    if (::pread(fd, tail.data(), tail.size(), size - length) != length) {
      return std::nullopt;
    }
    tail.pop_back(); // its newline
    start = tail.rfind('\n');
    if (start != std::string::npos || length == size) {
      break;
    }
  }
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

void
remove_if_empty(int dir_fd, const std::string& name, int fd)
{
  struct stat st
  {};
  // An appender that opened the log meanwhile and waits for its lock finds
  // the name gone and starts a new log (still_linked), losing nothing.
  if (lock(fd, LOCK_EX) && still_linked(dir_fd, name, fd) && ::fstat(fd, &st) == 0 && st.st_size == 0) {
    ::unlinkat(dir_fd, name.c_str(), 0);
  }
  lock(fd, LOCK_UN);
}

Expected<void>
take_back_appended(int root_fd, const Appended& appended)
{
  const off_t end = appended.start + static_cast<off_t>(appended.bytes.size());
  {
    // Reopened by name: a call keeps no descriptor per batch (a link of a
    // thousand inputs would run out of them).
    const auto [dir, name] = util::split_last(appended.relative);
    auto dir_fd = util::open_directory_beneath(root_fd, dir, false);
    if (!dir_fd) {
      return make_error(appended.relative, dir_fd.error().message);
    }
    if (!dir_fd->valid()) {
      return {}; // gone with all it held
    }
    const std::string file_name(name);
    Fd fd(::openat(dir_fd->get(), file_name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
      return errno == ENOENT ? Expected<void>() : make_error(appended.relative, util::errno_text(errno));
    }
    if (!lock(fd.get(), LOCK_EX)) {
      return make_error(appended.relative, "cannot lock: " + util::errno_text(errno));
    }
    struct stat st
    {};
    if (::fstat(fd.get(), &st) == 0 && st.st_ino == appended.inode && st.st_dev == appended.device
        && still_linked(dir_fd->get(), file_name, fd.get()) && st.st_size == end) {
      // Nothing came after it: cut it off, which needs no space on the disk.
      if (::ftruncate(fd.get(), appended.start) != 0) {
        return make_error(appended.relative, "cannot truncate: " + util::errno_text(errno));
      }
      if (appended.start == 0) {
        ::unlinkat(dir_fd->get(), file_name.c_str(), 0); // it held nothing else
      }
      return {};
    }
    // Others appended after it, or a compaction rewrote the log: rewrite it
    // without these lines. Our lock goes with `fd` first (replace_locked
    // takes its own on a descriptor of its own, which ours would block).
  }
  // The lines without their last newline, nor the one that closed a torn
  // line before them (that one stays).
  std::string_view lines = appended.bytes;
  if (lines.starts_with('\n')) {
    lines.remove_prefix(1);
  }
  if (lines.ends_with('\n')) {
    lines.remove_suffix(1);
  }
  return replace_locked(
    root_fd,
    appended.relative,
    appended.relative,
    layout::TempTag::compact,
    true,
    [&](const LockedLog& log) -> Expected<Replacement> {
      std::string text = log.text;
      // The last copy of `line` that is a whole line of `text`.
      auto find_line = [&](std::string_view line, size_t from) {
        for (size_t at = text.rfind(line, from); at != std::string::npos; at = text.rfind(line, at - 1)) {
          if ((at == 0 || text[at - 1] == '\n') && text.compare(at + line.size(), 1, "\n") == 0) {
            return at;
          }
          if (at == 0) {
            break;
          }
        }
        return std::string::npos;
      };
      // Where it was written, unless the log was rewritten since; else line
      // by line, the last copy of each (their times make them all but
      // unique). A line a compaction folded away is gone already.
      const size_t written_at = static_cast<size_t>(appended.start) + (appended.bytes.size() - lines.size());
      size_t removed = 0;
      if (written_at <= text.size() && find_line(lines, written_at) == written_at) {
        text.erase(written_at, lines.size() + 1);
        removed = 1;
      } else {
        for (std::string_view rest = lines; !rest.empty();) {
          const size_t newline = rest.find('\n');
          const std::string_view line = rest.substr(0, newline);
          rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
          if (const size_t at = find_line(line, std::string::npos); at != std::string::npos) {
            text.erase(at, line.size() + 1);
            ++removed;
          }
        }
      }
      Replacement replacement;
      if (removed == 0) {
        return replacement;
      }
      replacement.action = text.empty() ? Replacement::Action::remove : Replacement::Action::replace;
      replacement.text = std::move(text);
      return replacement;
    });
}

} // namespace fingerprint::store::detail
