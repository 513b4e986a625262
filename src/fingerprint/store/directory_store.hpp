#pragma once

#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/index_pack.hpp>
#include <fingerprint/store/input_journal.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/path_index.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fingerprint::store {

namespace detail {
struct Appended; // log_io.hpp
}

// Lines longer than this are refused when reading (a hostile or broken log
// must not make a reader allocate without bound). Events are a few hundred
// bytes; paths are limited to PATH_MAX.
inline constexpr size_t k_max_line_length = 1024 * 1024;

// The directory store, format 1: its files are laid out as layout.hpp says.
//
// Appends are one write() of one complete line on an O_APPEND descriptor
// under a shared flock(); compaction rewrites a log through a temporary file
// under an exclusive flock() on that log alone. Readers take no lock. Every
// open below the root is relative to the root's descriptor, one component at
// a time with O_NOFOLLOW.
class DirectoryStore final : public Store
{
public:
  // Opens an existing store for reading. A store that does not exist yet
  // opens as an empty one (queries answer "not recorded").
  static Expected<DirectoryStore> open_for_reading(const std::string& root);

  // Opens an existing store to change it in place (gc, fsck --repair); a
  // store that does not exist opens as an empty one and is not created.
  static Expected<DirectoryStore> open_for_updating(const std::string& root);

  // Opens the store for appending, creating it when missing.
  static Expected<DirectoryStore> open_for_writing(const std::string& root);

  const std::string&
  root() const
  {
    return m_root;
  }
  const std::string&
  location() const override
  {
    return m_root;
  }
  bool
  exists() const override
  {
    return m_root_fd.valid();
  }

  // The store's change lock (layout::k_change_lock), shared; an invalid Fd
  // when it cannot be had (a store this user may only append to): the
  // change goes ahead, and only fsck's view of it is less certain.
  util::Fd hold_for_change() const override;

  // Appends each event to its artifact's log and to its build's index.
  Expected<void> append(const std::vector<Event>& events, Warnings* warnings = nullptr) const override;

  // Appends `event` to the log of another artifact, `log` (not to a build
  // index): an installed copy's event also goes to the log of the
  // build-tree file it came from, so either can be found from the other.
  Expected<void> append_link(const DigestKey& log, const Event& event, Warnings* warnings = nullptr) const override;

  // One artifact's log as stored, for byte-level checks; empty when absent.
  Expected<std::string> read_raw_log(const DigestKey& key) const override;

  // Everything readable in one artifact's log; a log that does not exist
  // reads as empty.
  Expected<LogContents> read_log(const DigestKey& key) const override;

  Expected<bool> put_manifest(const DigestKey& key,
                              const std::string& encoded,
                              const Manifest& manifest,
                              Warnings* warnings = nullptr) const override;
  Expected<std::optional<Manifest>> read_manifest(const DigestKey& key) const override;
  // The index pack's copy once a whole-store read loaded it, else the file.
  Expected<std::optional<std::string>> read_manifest_bytes(const DigestKey& key) const override;
  Expected<bool> put_provenance(const BuildRef& build, const std::string& document) const override;
  Expected<std::optional<std::string>> read_provenance(const BuildRef& build) const override;
  Expected<bool> remove_provenance(const BuildRef& build, bool dry_run) const override;
  Expected<std::vector<DigestKey>> find_by_prefix(digest::Algorithm algorithm,
                                                  std::string_view prefix,
                                                  size_t limit) const override;
  Expected<std::vector<ManifestUse>> find_manifest_uses(const DigestKey& input,
                                                        std::vector<LogProblem>& problems) const override;

  // Folds inputs/<algorithm>/journal into the reverse index files
  // (input_journal.hpp) under its exclusive lock; the manifests it held
  // (0 when there was none). Lines that cannot be read stay in it.
  Expected<std::size_t> fold_input_journal(digest::Algorithm algorithm) const;
  // Every algorithm's (gc, fsck --repair, migrations).
  Expected<std::size_t> fold_input_journals() const;

  // Every artifact log, sorted by key (files that are not named like a
  // log are left for fsck).
  Expected<std::vector<DigestKey>> list_logs() const;

  // <store>/builds.summary (build_summary.hpp).
  Expected<std::optional<std::string>> read_build_summaries() const override;
  bool
  keeps_build_summaries() const override
  {
    return exists();
  }
  Expected<bool> write_build_summaries(const std::string& text) const override;
  std::optional<BuildStamp> build_stamp(const BuildRef& build) const override;
  // <store>/index.pack (index_pack.hpp): every build's index read from its
  // copy there while the index still has the copy's stamp.
  Expected<void> for_each_build(const std::string& project, const BuildVisitor& each) const override;
  Expected<std::optional<std::string>> read_index_pack() const;
  // The pack the queries use: mapped where the file can be, else read; a
  // null pointer when there is none or it is unusable (fsck says why).
  std::shared_ptr<const IndexPack> load_index_pack() const;
  // Writes it anew from every build index and manifest (gc, fsck --repair).
  Expected<bool> refresh_index_pack() const override;
  // fsck's part: a damaged pack, or a copy whose file (with the copy's
  // stamp) holds other bytes, is a finding; with `repair` it is written anew.
  void check_index_pack(FsckReport& report, bool repair) const;
  // paths.index and builds.recent (path_index.hpp).
  std::optional<BuildsAtPaths> builds_at_paths(const std::vector<std::string>& paths) const override;
  // fsck's part: a damaged index, an unreadable line of builds.recent, or a
  // build whose paths the index lacks and builds.recent does not name is a
  // finding; with `repair` the index is written anew.
  void check_path_index(FsckReport& report, bool repair) const;
  // The builds in the build index, sorted by project and build id.
  Expected<std::vector<BuildRef>> list_builds() const override;
  Expected<LogContents> read_build(const BuildRef& build) const override;

  // Rewrites one log without duplicate events (equal but for their time;
  // the earliest stays). Refuses a log with unreadable lines: those are for
  // fsck --repair to quarantine, never to drop.
  // `rewrite_always` rewrites the log even when nothing folds (the stress
  // test uses it to race appenders against the rename).
  Expected<CompactionResult> compact(const DigestKey& key, bool rewrite_always = false) const;

  // Removes the events `drop` selects from an artifact's log (or from a
  // build's index), under the log's exclusive lock; a log left with no
  // events is removed. With `dry_run`, only counts (and takes no lock).
  // Refuses a log with unreadable lines, as compaction does.
  Expected<CompactionResult> remove_events(const DigestKey& key, const EventFilter& drop, bool dry_run) const override;
  Expected<CompactionResult> remove_build_events(const BuildRef& build,
                                                 const EventFilter& drop,
                                                 bool dry_run) const override;

  // Checks every log and build index. With `repair`, moves each damaged or
  // stray file into quarantine/<run>/ (never deleting anything) and rebuilds
  // a damaged log from its readable lines plus the copies of its events kept
  // on the other side (an artifact's events are also in its builds' indexes,
  // and the other way round). Each rebuild takes the log's exclusive lock.
  Expected<FsckReport> fsck(const FsckOptions& options) const override;

  // A project name or build id as one path component (layout.hpp).
  static std::string
  encode_component(std::string_view text)
  {
    return layout::encode_component(text);
  }
  static std::string
  decode_component(std::string_view text)
  {
    return layout::decode_component(text);
  }

private:
  // The whole regular file `relative` below the root; nullopt when it is
  // not there (write-once files: a manifest, a build's provenance).
  Expected<std::optional<std::string>> read_whole(const std::string& relative) const;
  // A file at the root replaced whole: temporary file, fsync, rename,
  // directory fsync (builds.summary, index.pack).
  Expected<bool> write_root_file(const std::string& name, std::string_view text) const;
  // The index pack, read once, by the first whole-store read (for_each_build);
  // nullptr when there is none or it is unusable. read_manifest() takes a
  // manifest from it only once it is loaded: a per-artifact query never reads it.
  const IndexPack* index_pack() const;
  // What the pack would hold now: indexes read whole between two equal
  // stamps, and the manifests they name whose bytes match their name. With
  // `paths`, every build and the paths it names go there too (a build not
  // read whole, or naming a manifest that cannot be read, as read always).
  Expected<std::vector<PackedBuild>> packable_builds(std::deque<std::string>& texts,
                                                     std::vector<PackedManifest>& manifests,
                                                     PathIndexBuilder* paths = nullptr) const;
  // Where builds.recent ends now.
  RecentMark recent_mark() const;
  // Writes paths.index whole, then keeps only the lines of builds.recent
  // after its mark.
  Expected<void> write_path_index(PathIndexBuilder& paths) const;
  DirectoryStore(std::string root, util::Fd root_fd);

  // Appends complete lines (newline-separated, without the last newline);
  // on error nothing of them stays, and a log it created is removed.
  Expected<detail::Appended> append_line(const std::string& relative_path,
                                         const std::string& lines,
                                         Warnings* warnings) const;
  // append_line() in a directory already open: `file_name` in `dir_fd`,
  // which is `relative_path` below the root. Without `locate`, the
  // answer's `start` is not looked up (an lseek): only a caller that may
  // take the lines back needs it.
  Expected<detail::Appended> append_in(int dir_fd,
                                       const std::string& relative_path,
                                       const std::string& file_name,
                                       const std::string& lines,
                                       Warnings* warnings,
                                       bool locate = true) const;
  Expected<LogContents> read_file(const std::string& relative_path) const;

  // Replaces a log by what `transform` keeps of its events: temporary
  // file, fsync, rename, directory fsync, under the exclusive lock.
  using Rewriter = std::function<std::vector<Event>(const std::vector<Event>&)>;
  struct RewriteOptions
  {
    bool rewrite_always = false;  // even when nothing changed
    bool remove_if_empty = false; // unlink a log left with no events
    bool dry_run = false;         // only count
  };
  Expected<CompactionResult> rewrite(const std::string& relative,
                                     const Rewriter& transform,
                                     const RewriteOptions& options) const;
  Expected<CompactionResult> remove_events_from(const std::string& relative,
                                                const EventFilter& drop,
                                                bool dry_run) const;

  // An algorithm's journal as a query reads it: once per process.
  struct JournalIndex
  {
    JournalContents contents;
    std::unordered_map<std::string_view, std::vector<std::uint32_t>> by_input;
  };
  Expected<const JournalIndex*> input_journal(digest::Algorithm algorithm) const;

  std::string m_root;
  util::Fd m_root_fd;
  mutable std::map<digest::Algorithm, std::shared_ptr<const JournalIndex>> m_journals;
  mutable std::shared_ptr<const IndexPack> m_pack;
  mutable bool m_pack_tried = false;
};

} // namespace fingerprint::store
