#pragma once

#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace fingerprint::store {

// Something wrong in a log, found while reading it.
struct LogProblem
{
  std::string file; // relative to the store
  size_t line = 0;  // 1-based
  std::string message;
};

// The readable events of one log and what could not be read.
struct LogContents
{
  std::vector<Event> events;
  std::vector<LogProblem> problems;
  // The log ends in a line without its newline: a writer died mid-write.
  // Such a line was never acknowledged and is ignored, not reported as a
  // problem; fsck repairs it.
  bool torn_tail = false;
};

struct BuildRef
{
  std::string project; // decoded
  std::string build;   // decoded
};

struct CompactionResult
{
  size_t events_before = 0;
  size_t events_after = 0;
};

// Lines longer than this are refused when reading (a hostile or broken log
// must not make a reader allocate without bound). Events are a few hundred
// bytes; paths are limited to PATH_MAX.
inline constexpr size_t k_max_line_length = 1024 * 1024;

// The directory store, format 1 (DESIGN.md section 4).
//
// Appends are one write() of one complete line on an O_APPEND descriptor
// under a shared flock(); compaction rewrites a log through a temporary file
// under an exclusive flock() on that log alone. Readers take no lock. Every
// open below the root is relative to the root's descriptor, one component at
// a time with O_NOFOLLOW.
class DirectoryStore
{
public:
  // Opens an existing store for reading. A store that does not exist yet
  // opens as an empty one (queries answer "not recorded").
  static Expected<DirectoryStore> open_for_reading(const std::string& root);

  // Opens the store for appending, creating it when missing.
  static Expected<DirectoryStore> open_for_writing(const std::string& root);

  const std::string&
  root() const
  {
    return m_root;
  }
  bool
  exists() const
  {
    return m_root_fd.valid();
  }

  // Appends each event to its artifact's log and to its build's index.
  Expected<void> append(const std::vector<Event>& events) const;

  // Appends `event` to the log of another artifact, `log` (not to a build
  // index): an installed copy's event also goes to the log of the
  // build-tree file it came from, so either can be found from the other.
  Expected<void> append_link(const DigestKey& log, const Event& event) const;

  // One artifact's log as stored, for byte-level checks; empty when absent.
  Expected<std::string> read_raw_log(const DigestKey& key) const;

  // Everything readable in one artifact's log; a log that does not exist
  // reads as empty.
  Expected<LogContents> read_log(const DigestKey& key) const;

  // The builds in the build index, sorted by project and build id.
  Expected<std::vector<BuildRef>> list_builds() const;
  Expected<LogContents> read_build(const BuildRef& build) const;

  // Rewrites one log without duplicate events (equal but for their time;
  // the earliest stays). Refuses a log with unreadable lines: those are for
  // fsck --repair to quarantine, never to drop.
  // `rewrite_always` rewrites the log even when nothing folds (the stress
  // test uses it to race appenders against the rename).
  Expected<CompactionResult> compact(const DigestKey& key, bool rewrite_always = false) const;

  // Encoding of a project name or build id as one path component: bytes
  // outside [A-Za-z0-9._+-] (and a leading '.') become %XX.
  static std::string encode_component(std::string_view text);
  static std::string decode_component(std::string_view text);

private:
  DirectoryStore(std::string root, util::Fd root_fd);

  // Appends complete lines (newline-separated, without the last newline).
  Expected<void> append_line(const std::string& relative_path, const std::string& lines) const;
  Expected<LogContents> read_file(const std::string& relative_path) const;

  std::string m_root;
  util::Fd m_root_fd;
};

} // namespace fingerprint::store
