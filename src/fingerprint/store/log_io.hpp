#pragma once

// The directory store's file primitives, shared by the store and by fsck.
// Not part of the store's interface.

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>

namespace fingerprint::store::detail {

// Opens `relative` below the store root with O_NOFOLLOW on every component;
// a file that does not exist yields an invalid Fd unless `flags` has O_CREAT.
Expected<util::Fd> open_below(int root_fd, const std::string& relative, int flags, bool create_parents);

// Creates the store's format file when it is missing (two processes
// creating a store at once agree on one), and checks it; an older store's
// is upgraded in place to the current format (format.hpp), since what a
// writer adds now is of the current format.
Expected<void> ensure_format_file(int root_fd, const std::string& root);

// Why the store file with status `st` must not be written to, if it must
// not: a second hard link (what is written would land in a file outside the
// store as well), or a file of nobody who uses the store: owned by neither
// this user, nor root, nor the store directory's owner, and not of the
// store directory's group (a group-shared store's setgid directories give
// every member's files that group, and only members can give it).
std::optional<std::string> refused_file(int root_fd, const struct stat& st);

// The store's change lock (layout::k_change_lock) taken with `operation`
// (LOCK_SH or LOCK_EX), created when missing; an invalid Fd when it cannot
// be opened or locked.
util::Fd change_lock(int root_fd, int operation);
// The same, of the empty file `name` at the root (path_index.hpp's);
// without `create`, a file that is not there is not made (a reader's).
util::Fd lock_file(int root_fd, std::string_view name, int operation, bool create = true);

// flock(), retrying on EINTR.
bool lock(int fd, int operation);

// Whether `fd` is still the file called `name` in `dir_fd` (a compaction or
// a repair may have renamed a new log over it while we waited for the lock).
bool still_linked(int dir_fd, std::string_view name, int fd, struct stat* fd_stat = nullptr);

// What replace_locked does with a log, decided while holding its lock.
struct Replacement
{
  enum class Action
  {
    keep,    // leave the log as it is
    replace, // replace it by `text`
    remove,  // unlink it
  };
  Action action = Action::keep;
  std::string text;
};

// Where the log is and what it holds, for `decide`.
struct LockedLog
{
  int dir_fd;
  const std::string& name;
  int fd;                  // open read-write, at the end of the file
  const std::string& text; // its contents
};

using Decide = std::function<Expected<Replacement>(const LockedLog& log)>;

// The one way a log is rewritten (compaction, gc, fsck --repair): under an
// exclusive flock() on the log's current inode (if a rewrite renamed a new
// log over it meanwhile, the new one is locked instead), reads it, asks
// `decide`, and keeps it, unlinks it, or replaces it through a temporary
// file (layout::temp_name) given the old one's mode and group, fsync'ed,
// renamed over the log, and the directory fsync'ed. Appenders wait for the
// lock and then find the new log, so nothing appended meanwhile is lost.
// With `take_lock` false (a dry run) nothing is locked and `decide` must
// keep the log. `display` names the log in errors; a missing log is "no
// such log".
Expected<void> replace_locked(int root_fd,
                              const std::string& relative,
                              const std::string& display,
                              layout::TempTag tag,
                              bool take_lock,
                              const Decide& decide);

// A log held under its exclusive flock(), created (empty) when missing: what
// gc holds while it removes an input manifest whose log is empty, so that
// no record call appends a user of the manifest meanwhile (an appender
// waits, then finds the name gone and starts a new log).
struct HeldLog
{
  util::Fd dir;
  util::Fd fd; // open read-write
  std::string name;
};
Expected<HeldLog> hold_log(int root_fd, const std::string& relative, const std::string& display);

// Removes the held log if it is still its name's file and empty.
void remove_held_if_empty(const HeldLog& log);

// Whether a log of `size` bytes, open as `fd`, ends in a line cut short by
// a writer that died mid-write (and not one a live writer is still copying).
bool tail_is_torn(int fd, off_t size);

// A warning about the log's last line (torn, unreadable, too long), if any.
std::optional<std::string> look_at_tail(int fd, off_t size, bool torn);

// After a short write of `written` bytes on an O_APPEND descriptor: takes
// the partial line back when nothing came after it, and says what happened.
std::string take_back(int fd, ssize_t written);

// One batch of lines that append() wrote to one log: where its bytes
// landed, so that a later failure of the same call can take them back.
struct Appended
{
  std::string relative; // the log, below the root
  dev_t device = 0;     // the file it was written to
  ino_t inode = 0;
  off_t start = 0;      // where the bytes begin
  off_t size_after = 0; // the log's size once they were written (others may have written since)
  std::string bytes;    // exactly what was written
};

// Takes a completed batch back out of its log: truncated off when nothing
// came after it (a log that held nothing else is removed), else the log is
// rewritten without those lines under its exclusive lock (replace_locked).
// Lines already folded away by a compaction meanwhile count as taken back.
Expected<void> take_back_appended(int root_fd, const Appended& appended);

// Removes the log open as `fd` (called `name` in `dir_fd`) if it is still
// there and empty, under its exclusive lock: what an append that failed
// before writing a byte leaves behind.
void remove_if_empty(int dir_fd, const std::string& name, int fd);

// What makes two events the same record (all but their time): compaction
// keeps one of each, fsck pairs an artifact log's copy with its index's.
std::string dedupe_key(const Event& event);

// Splits a log into events and problems; `file` names it in problems.
void parse_lines(std::string_view text, const std::string& file, LogContents& out);

} // namespace fingerprint::store::detail
