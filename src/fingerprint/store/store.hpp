#pragma once

#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::store {

// Something wrong in a log, found while reading it.
struct LogProblem
{
  std::string file; // relative to the store (a database names the row)
  size_t line = 0;  // 1-based
  std::string message;
  // The line is the start of an event cut short: a writer died mid-write
  // and a later writer began a fresh line after it.
  bool torn = false;
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

// A build index file as stat() saw it (build_summary.hpp): any append
// changes its size, any rewrite (compaction, gc, repair) its inode.
struct BuildStamp
{
  uint64_t size = 0;
  uint64_t inode = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  bool operator==(const BuildStamp&) const = default;
};

struct CompactionResult
{
  size_t events_before = 0;
  size_t events_after = 0;
  bool removed = false; // nothing was left, and the log went
};

// What fsck finds. A crash (a killed writer or compaction) leaves only the
// first two kinds; anything else is damage from outside.
enum class FsckKind
{
  torn_line, // a line cut short by a writer that died mid-write
  leftover,  // a temporary file of an interrupted compaction or repair
  damage,    // an unreadable line, a misplaced event, a stray file
  one_sided, // an event in its artifact's log or its build's index, not both
  empty,     // a log with nothing in it, left by a call that failed or died
};

std::string_view fsck_kind_name(FsckKind kind);

// One thing fsck found wrong, and what --repair did about it.
struct FsckFinding
{
  std::string file; // relative to the store
  size_t line = 0;  // 1-based; 0 for the whole file
  std::string problem;
  FsckKind kind = FsckKind::damage;
  std::string repair; // empty when not repaired
};

struct FsckReport
{
  size_t logs = 0;                // artifact logs read
  size_t build_indexes = 0;       // build index files read
  size_t manifests = 0;           // input manifests read
  size_t reverse_indexes = 0;     // reverse index files (inputs/) read
  size_t journaled_manifests = 0; // manifests in the reverse index's journal, not yet folded
  size_t events = 0;              // readable events in them
  std::vector<FsckFinding> findings;
  size_t repaired = 0;        // findings that --repair dealt with
  size_t events_restored = 0; // events a rebuilt log got back from its counterparts
  std::string quarantine;     // where this run moved files, relative to the store
  // What is not damage but worth saying (a time in the future: the
  // recording machine's clock was ahead); no repair, no failure.
  std::vector<std::string> warnings;
};

struct FsckOptions
{
  bool repair = false;
  // Called as files are checked: (done, total).
  std::function<void(size_t, size_t)> progress;
};

struct ConsumerHit
{
  Event event;
  int depth = 1; // 1: consumed the artifact itself; 2: consumed a product of depth 1; ...
};

// What `migrate` did.
struct MigrateReport
{
  size_t logs = 0;               // artifact logs read from the directory
  size_t events_read = 0;        // events in them
  size_t events_copied = 0;      // events written
  size_t events_present = 0;     // already there (a second run copies none)
  size_t manifests_copied = 0;   // input manifests written
  size_t manifests_present = 0;  // already there
  size_t provenance_copied = 0;  // builds' provenance documents written
  size_t provenance_present = 0; // already there
};

struct Migration;      // what migrate() read from a directory store (migrate.hpp)
struct ArtifactRecord; // one artifact's log folded (artifact_record.hpp)

// What every backend keeps: each artifact's log (its events, in the order
// they were appended) and each build's index (the events of that build).
// The directory store (directory_store.hpp) keeps them as JSON Lines files;
// the PostgreSQL store (postgres_store.hpp) as rows. The subcommands see only
// this interface, so they answer alike on both.
class Store
{
public:
  virtual ~Store() = default;

  // Where the store is, for messages: a directory, or a database URL with
  // its password masked.
  virtual const std::string& location() const = 0;

  // Whether anything was ever recorded there: a directory that exists, a
  // database with the store's tables. Only writers create a store; a
  // reader of one that does not exist is told so (cmd/main.cpp).
  virtual bool
  exists() const
  {
    return true;
  }

  // Warnings about a log's health met while appending (a torn or
  // unreadable last line): the append went ahead regardless.
  using Warnings = std::vector<std::string>;

  // Appends each event to its artifact's log and to its build's index; all
  // or, on error, as little as the backend allows (a database: nothing).
  virtual Expected<void> append(const std::vector<Event>& events, Warnings* warnings = nullptr) const = 0;

  // append() for the events of one record call named `call` (new_call_id(),
  // store/spool.hpp), exactly once: a database keeps the id with the events,
  // in the same transaction, and takes a call it holds already as done
  // (false), so a journaled call whose first delivery was cut short after
  // the commit is not stored twice. The default (a directory, which nothing
  // journals for) appends.
  virtual Expected<bool> append_call(const std::string& call,
                                     const std::vector<Event>& events,
                                     Warnings* warnings = nullptr) const;

  // Appends `event` to the log of another artifact, `log` (not to a build
  // index): an installed copy's event also goes to the log of the
  // build-tree file it came from, so either can be found from the other.
  virtual Expected<void> append_link(const DigestKey& log, const Event& event, Warnings* warnings = nullptr) const = 0;

  // Everything readable in one artifact's log; a log that does not exist
  // reads as empty.
  virtual Expected<LogContents> read_log(const DigestKey& key) const = 0;

  // The logs of `keys`, each as read_log() reads it, by key (str()). The
  // default reads them one by one; a database reads them in one statement,
  // where a query naming each consumer's product made a round trip apiece.
  virtual Expected<std::map<std::string, LogContents>> read_logs(const std::vector<DigestKey>& keys) const;

  // Stores an input manifest (manifest.hpp) under `key`, its name, from
  // `encoded`, its bytes, unless the store has it already. The reverse
  // index gets every entry before the manifest itself appears: a manifest
  // the store has is listed under each input it names, so that a call
  // finding it need not list its inputs again. Returns whether it was new.
  // A store that keeps no manifests refuses.
  virtual Expected<bool> put_manifest(const DigestKey& key,
                                      const std::string& encoded,
                                      const Manifest& manifest,
                                      Warnings* warnings = nullptr) const;

  // Removes those of the manifests `keys` that no event names any more, with
  // their reverse index entries; with `dry_run`, only counts. The directory
  // store's gc does this itself, file by file under the logs' locks
  // (store/gc.cpp); the default removes nothing.
  virtual Expected<size_t>
  remove_unused_manifests(const std::vector<DigestKey>& /*keys*/, bool /*dry_run*/) const
  {
    return size_t{0};
  }

  // The manifest called `key`; nullopt when the store does not have it.
  virtual Expected<std::optional<Manifest>> read_manifest(const DigestKey& key) const;
  // Its stored bytes (manifest.hpp's encoding), for a reader that decodes
  // its columns (decode_manifest_columns()) rather than one entry at a
  // time. The default encodes what read_manifest() gives.
  virtual Expected<std::optional<std::string>> read_manifest_bytes(const DigestKey& key) const;
  // The manifest as columns, into `columns` (its buffers reused): its
  // stored bytes decoded, or, when they do not decode, what read_manifest()
  // reads (a damaged copy is read from its file there, and an error names
  // the file). False when the store does not have it.
  Expected<bool> read_manifest_columns(const DigestKey& key, ManifestColumns& columns) const;

  // The manifests that list the artifact `input`, each once (the manifest
  // says in which roles). Unreadable entries of the reverse index are
  // appended to `problems`.
  virtual Expected<std::vector<ManifestUse>> find_manifest_uses(const DigestKey& input,
                                                                std::vector<LogProblem>& problems) const;

  // The artifacts whose digest in `algorithm` begins with `prefix` (lower
  // hex, 2 digits or more): those with a log, and the files some build read
  // (an input manifest lists them). Sorted, each once, at most `limit`. The
  // default finds none.
  virtual Expected<std::vector<DigestKey>> find_by_prefix(digest::Algorithm algorithm,
                                                          std::string_view prefix,
                                                          size_t limit) const;

  // One artifact's log as the directory store writes it (one JSON line per
  // event), for byte-level checks; empty when absent.
  virtual Expected<std::string> read_raw_log(const DigestKey& key) const = 0;

  // Stores build `build`'s provenance (provenance.hpp), `document` its
  // JSON text, unless the store has one for that build already: a build's
  // provenance is written once. Returns whether it was new. A store that
  // keeps none refuses.
  virtual Expected<bool> put_provenance(const BuildRef& build, const std::string& document) const;

  // Build `build`'s provenance document as stored, checked
  // (parse_provenance); nullopt when the store has none.
  virtual Expected<std::optional<std::string>> read_provenance(const BuildRef& build) const;

  // Removes build `build`'s provenance, once gc has removed the last of its
  // events; with `dry_run`, only says whether there is one.
  virtual Expected<bool> remove_provenance(const BuildRef& build, bool dry_run) const;

  // The summary of the build index (build_summary.hpp): the text of the
  // store's summary file (PostgreSQL: of its one row), nullopt when it has
  // none or keeps none.
  virtual Expected<std::optional<std::string>> read_build_summaries() const;
  virtual bool
  keeps_build_summaries() const
  {
    return false;
  }
  // Replaces that file whole with `text` (temporary file, fsync, rename);
  // false when the store keeps none.
  virtual Expected<bool> write_build_summaries(const std::string& text) const;
  // What stat() says of a build's index now (a database: what stands for
  // it); nullopt when the store has no such files (or the build none).
  virtual std::optional<BuildStamp> build_stamp(const BuildRef& build) const;
  // Writes the store's index pack anew (index_pack.hpp: gc and fsck
  // --repair); false when the store keeps none.
  virtual Expected<bool>
  refresh_index_pack() const
  {
    return false;
  }

  // The builds whose events or products' input manifests may name one of
  // `paths` (a superset, sorted as list_builds() sorts), each with whether
  // it may name one as a manifest input; nullopt when the store keeps no
  // index by path (path_index.hpp) or cannot use it now: the caller reads
  // every build then.
  struct BuildsAtPaths
  {
    std::vector<BuildRef> builds;
    std::vector<bool> through_inputs;
  };
  virtual std::optional<BuildsAtPaths>
  builds_at_paths(const std::vector<std::string>& /*paths*/) const
  {
    return std::nullopt;
  }

  // The builds in the build index, sorted by project and build id.
  virtual Expected<std::vector<BuildRef>> list_builds() const = 0;
  virtual Expected<LogContents> read_build(const BuildRef& build) const = 0;

  // Calls `each` with every build's index, in list_builds' order (only
  // `project`'s builds when it is not empty). The default reads one index
  // at a time; a database answers in one query.
  using BuildVisitor = std::function<void(const BuildRef&, LogContents&)>;
  virtual Expected<void> for_each_build(const std::string& project, const BuildVisitor& each) const;
  // Calls `each` with the index of each of `builds` (sorted as
  // list_builds() sorts), in that order; a build without one is skipped by
  // a database and read as empty by the default, which reads one index at a
  // time. A database reads them, and the input manifests their products
  // name, in one statement each (a builds summary's lines out of date).
  virtual Expected<void> for_each_build_of(const std::vector<BuildRef>& builds, const BuildVisitor& each) const;

  // Removes the events `drop` selects from an artifact's log (or from a
  // build's index); a log left with no events is removed. With `dry_run`,
  // only counts. Refuses a log with unreadable lines.
  using EventFilter = std::function<bool(const Event&)>;
  virtual Expected<CompactionResult> remove_events(const DigestKey& key,
                                                   const EventFilter& drop,
                                                   bool dry_run) const = 0;
  virtual Expected<CompactionResult> remove_build_events(const BuildRef& build,
                                                         const EventFilter& drop,
                                                         bool dry_run) const = 0;

  // Checks the whole store; with `repair`, sets damaged data aside (never
  // deleting it) and rebuilds what can be rebuilt.
  virtual Expected<FsckReport> fsck(const FsckOptions& options) const = 0;

  // Held (shared) by every change that writes one event to several places
  // (an append's logs and index, a gc's logs and indexes), so that fsck
  // --repair, holding it exclusively, never takes a change in progress for a
  // one-sided event. A database's changes are transactions: nothing to hold.
  virtual util::Fd
  hold_for_change() const
  {
    return {};
  }

  // One artifact's record (store::load_record, artifact_record.hpp): its log
  // folded, and the consumers its input manifests name. The default reads
  // the log and then each manifest and its users; a database answers in one
  // query.
  virtual Expected<ArtifactRecord> load_artifact(const DigestKey& key) const;

  // Who consumed `key` or an installed copy of it; with `transitive`, also
  // who consumed their products, breadth first, each product expanded once
  // (so cycles end). Problems met in any log are appended to `problems`.
  // The default reads one log at a time; a database answers in one query.
  virtual Expected<std::vector<ConsumerHit>> find_consumers(const DigestKey& key,
                                                            bool transitive,
                                                            std::vector<LogProblem>& problems) const;

  // The shortest chain of events that leads from artifact `from` to artifact
  // `to`: each step is a `consumed` event (its product is the next artifact)
  // or an `installed` one (an installed copy of the artifact). Empty when
  // `to` does not depend on `from`; `from == to` is a chain of no steps.
  virtual Expected<std::vector<Event>> find_chain(const DigestKey& from,
                                                  const DigestKey& to,
                                                  std::vector<LogProblem>& problems) const;

  // The writing half of migrate() (migrate.hpp): copies in, all or
  // nothing, the events of `migration` that are not here yet (each as many
  // times as the directory has it more than this store), every log and
  // build index in its recorded order (recording_order). Sets the report's
  // events_copied and events_present; `progress` gets (written, to write).
  // Only a database takes imports; the default refuses.
  virtual Expected<MigrateReport> import_from(const Migration& migration,
                                              const std::function<void(size_t, size_t)>& progress) const;
};

enum class Access
{
  read,   // a store that does not exist yet reads as empty
  write,  // created (a database: its tables) when missing
  update, // changed in place (gc, repair) when it exists; never created
};

// "postgresql://..." or "postgres://...": a database, not a directory.
bool is_database_url(std::string_view location);

// The store at `location`: a PostgreSQL URL or a directory.
Expected<std::unique_ptr<Store>> open_store(const std::string& location, Access access);

// What opens a database URL. The library alone opens directories only, so
// that the statically linked runner does not carry libpq;
// store::enable_postgresql() (postgres_store.hpp) registers the PostgreSQL
// store.
using DatabaseOpener = Expected<std::unique_ptr<Store>> (*)(const std::string& url, Access access);
void set_database_opener(DatabaseOpener opener);

} // namespace fingerprint::store
