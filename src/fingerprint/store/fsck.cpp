// fsck: the directory store checked file by file, and repaired without
// deleting anything.

#include <fingerprint/store/build_summary.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/store/signature.hpp>
#include <fingerprint/store/time_check.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace {

using util::Fd;

using StoreFile = layout::Entry;
using FileKind = layout::Entry::Kind;

// A store file's text for a second look; a file gone meanwhile reads as
// empty, one that cannot be read as nothing (the first pass reported it).
std::optional<std::string>
read_again(int root_fd, const std::string& relative)
{
  auto fd = detail::open_below(root_fd, relative, O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return std::nullopt;
  }
  if (!fd->valid()) {
    return std::string();
  }
  auto text = util::read_all(fd->get());
  return text ? std::optional<std::string>(std::move(*text)) : std::nullopt;
}

// Whether `event` names an input manifest: a produced event since format 2.
bool
names_manifest(const Event& event)
{
  return event.event == EventKind::produced && !event.inputs.empty();
}

// Whether `event` belongs in `file`: an artifact log holds the artifact's
// own events, the `installed` events of its installed copies, and, when
// the artifact is an input manifest, the produced events made from it; a
// build index holds its build's events.
bool
belongs(const StoreFile& file, const Event& event)
{
  if (file.kind == FileKind::artifact_log) {
    const std::string key = file.key.str();
    return event.digest == key || (event.event == EventKind::installed && event.from == key)
           || (names_manifest(event) && event.inputs == key);
  }
  return event.project == file.build.project && event.build == file.build.build;
}

// A log read and sorted into what stays and what is wrong with it.
struct Checked
{
  std::vector<Event> events;
  std::vector<FsckFinding> findings;
};

Checked
check_contents(const StoreFile& file, std::string_view text)
{
  Checked checked;
  LogContents contents;
  detail::parse_lines(text, file.relative, contents);
  for (auto& problem : contents.problems) {
    checked.findings.push_back(
      {file.relative,
       problem.line,
       problem.torn ? "torn line (a writer died mid-write): " + problem.message : "unreadable line: " + problem.message,
       problem.torn ? FsckKind::torn_line : FsckKind::damage,
       {}});
  }
  if (contents.torn_tail) {
    const auto lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    checked.findings.push_back(
      {file.relative, lines + 1, "torn last line (a writer died mid-write)", FsckKind::torn_line, {}});
  }
  for (auto& event : contents.events) {
    if (!belongs(file, event)) {
      checked.findings.push_back({file.relative,
                                  0,
                                  file.kind == FileKind::artifact_log
                                    ? "holds an event of another artifact (" + event.digest + ")"
                                    : "holds an event of another build (" + event.project + " " + event.build + ")",
                                  FsckKind::damage,
                                  {}});
      continue;
    }
    checked.events.push_back(std::move(event));
  }
  return checked;
}

// Puts a copy of the file open as `fd` (called `name` in `dir_fd`) at
// `target` below the root: a hard link when allowed, else a byte copy.
Expected<void>
keep_copy(int root_fd, int dir_fd, const std::string& name, int fd, const std::string& target)
{
  const auto [target_dir, target_name] = util::split_last(target);
  auto quarantine_fd = util::open_directory_beneath(root_fd, target_dir, true);
  if (!quarantine_fd) {
    return quarantine_fd.error();
  }
  const std::string target_file(target_name);
  // A hard link when that adds no way out of the store: never to a file
  // the store refuses (a second link to it would be one more).
  struct stat st
  {};
  const bool may_link = ::fstat(fd, &st) == 0 && !detail::refused_file(root_fd, st);
  if (may_link && ::linkat(dir_fd, name.c_str(), quarantine_fd->get(), target_file.c_str(), 0) == 0) {
    return util::fsync_directory(quarantine_fd->get());
  }
  // Someone else's file under fs.protected_hardlinks: copy it.
  auto text = util::read_all(fd);
  if (!text) {
    return text.error();
  }
  // A refused file may be an outside file this user can read and the
  // group cannot: its copy is this user's alone.
  Fd out(::openat(quarantine_fd->get(),
                  target_file.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  may_link ? 0666 : 0600));
  if (!out) {
    return make_error(target, util::errno_text(errno));
  }
  if (auto written = util::write_all(out.get(), *text); !written) {
    return written.error();
  }
  if (::fsync(out.get()) != 0) {
    return make_error(target, util::errno_text(errno));
  }
  return util::fsync_directory(quarantine_fd->get());
}

// Moves a stray entry (any type) into the quarantine.
Expected<void>
move_aside(int root_fd, const std::string& relative, const std::string& target)
{
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(root_fd, dir, false);
  if (!dir_fd) {
    return dir_fd.error();
  }
  if (!dir_fd->valid()) {
    return make_error(relative, "disappeared");
  }
  const auto [target_dir, target_name] = util::split_last(target);
  auto quarantine_fd = util::open_directory_beneath(root_fd, target_dir, true);
  if (!quarantine_fd) {
    return quarantine_fd.error();
  }
  if (::renameat(dir_fd->get(), std::string(name).c_str(), quarantine_fd->get(), std::string(target_name).c_str())
      != 0) {
    return make_error(relative, util::errno_text(errno));
  }
  (void)util::fsync_directory(quarantine_fd->get());
  return util::fsync_directory(dir_fd->get());
}

// The copies of a damaged file's events kept elsewhere: for an artifact
// log, the events of it in every build index; for a build index, its
// build's events in every artifact log.
std::map<std::string, std::vector<Event>>
gather_counterparts(int root_fd, const std::vector<StoreFile>& files, const std::vector<const StoreFile*>& damaged)
{
  std::map<std::string, const StoreFile*> wanted_logs;   // digest -> file
  std::map<std::string, const StoreFile*> wanted_builds; // project '\0' build -> file
  for (const StoreFile* file : damaged) {
    if (file->kind == FileKind::artifact_log) {
      wanted_logs[file->key.str()] = file;
    } else if (file->kind == FileKind::build_index) {
      wanted_builds[file->build.project + '\0' + file->build.build] = file;
    }
  }
  std::map<std::string, std::vector<Event>> found;
  for (const StoreFile& source : files) {
    const bool read_it = (source.kind == FileKind::build_index && !wanted_logs.empty())
                         || (source.kind == FileKind::artifact_log && !wanted_builds.empty());
    if (!read_it) {
      continue;
    }
    auto text = read_again(root_fd, source.relative);
    if (!text || text->empty()) {
      continue;
    }
    LogContents contents;
    detail::parse_lines(*text, source.relative, contents);
    for (auto& event : contents.events) {
      if (source.kind == FileKind::build_index) {
        for (const std::string* digest : {&event.digest, &event.from, &event.inputs}) {
          auto target = wanted_logs.find(*digest);
          if (target != wanted_logs.end() && belongs(*target->second, event) && belongs(source, event)) {
            found[target->second->relative].push_back(event);
          }
        }
      } else if (event.digest == source.key.str()) { // not an installed copy's link, nor a manifest's copy
        auto target = wanted_builds.find(event.project + '\0' + event.build);
        if (target != wanted_builds.end()) {
          found[target->second->relative].push_back(event);
        }
      }
    }
  }
  return found;
}

struct RebuildResult
{
  size_t kept = 0;
  size_t restored = 0;
  bool changed = false;
};

// Rebuilds one log under its exclusive lock: the original goes to
// `quarantined_as`, and a new log of its readable events plus the missing
// `extra` ones is renamed over it.
Expected<RebuildResult>
rebuild_log(int root_fd, const StoreFile& file, const std::vector<Event>& extra, const std::string& quarantined_as)
{
  RebuildResult result;
  auto done = detail::replace_locked(
    root_fd,
    file.relative,
    file.relative,
    layout::TempTag::repair,
    true,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      Checked checked = check_contents(file, log.text);
      result = RebuildResult{};
      std::set<std::string> lines;
      detail::Replacement replacement;
      auto add = [&](const Event& event) {
        std::string line = serialize(event);
        if (lines.insert(line).second) {
          replacement.text += line;
          replacement.text += '\n';
          return true;
        }
        return false;
      };
      for (const Event& event : checked.events) {
        result.kept += add(event) ? 1 : 0;
      }
      for (const Event& event : extra) {
        result.restored += add(event) ? 1 : 0;
      }
      struct stat st
      {};
      const bool refused = ::fstat(log.fd, &st) == 0 && detail::refused_file(root_fd, st);
      if (checked.findings.empty() && result.restored == 0 && !refused) {
        return detail::Replacement{}; // healthy by now: another repair got there first
      }
      // The original goes to the quarantine before it is replaced, under the same lock.
      ::lseek(log.fd, 0, SEEK_SET);
      if (auto kept = keep_copy(root_fd, log.dir_fd, log.name, log.fd, quarantined_as); !kept) {
        return make_error(file.relative, "cannot keep a copy in the quarantine: " + kept.error().message);
      }
      // Nothing readable left: no log rather than an empty one.
      replacement.action =
        replacement.text.empty() ? detail::Replacement::Action::remove : detail::Replacement::Action::replace;
      result.changed = true;
      return replacement;
    });
  if (!done) {
    return done.error();
  }
  return result;
}

// How long a change can take at most, for fsck --repair without the change
// lock: what is younger may be a change still in progress.
constexpr std::int64_t k_settle_ns = 60LL * 1'000'000'000;

// Where an event is kept: its build's index, its artifact's log, for an
// installed copy of another file also that file's log, and for a product
// of an input manifest also the manifest's log (append() and `installed`
// write all of them). An event seen in some and not all of them is
// one-sided: a call that did not finish, an interrupted gc, or a lost line.
enum Home : std::uint8_t
{
  in_index = 1,
  in_log = 2,
  in_origin_log = 4,
  in_manifest_log = 8,
};

constexpr std::uint8_t k_homes[] = {in_log, in_origin_log, in_manifest_log, in_index};

std::uint8_t
homes_of(const Event& event)
{
  const bool linked = event.event == EventKind::installed && !event.from.empty() && event.from != event.digest;
  const bool made = names_manifest(event) && event.inputs != event.digest;
  return in_index | in_log | (linked ? in_origin_log : 0) | (made ? in_manifest_log : 0);
}

std::uint8_t
home_in(const StoreFile& file, const Event& event)
{
  if (file.kind == FileKind::build_index) {
    return in_index;
  }
  const std::string key = file.key.str();
  if (event.digest == key) {
    return in_log;
  }
  return names_manifest(event) && event.inputs == key ? in_manifest_log : in_origin_log;
}

std::string
home_path(std::uint8_t home, const Event& event)
{
  if (home == in_index) {
    return layout::build_index({event.project, event.build});
  }
  auto key = parse_digest_key(home == in_log ? event.digest : home == in_manifest_log ? event.inputs : event.from);
  return key ? key->log_path() : std::string();
}

// One event seen in one file: 16 bytes, so a store of millions of events
// is cross-checked in memory.
struct Sighting
{
  std::uint64_t event; // hash of its dedupe key
  std::uint32_t file;  // index into the walk
  std::uint8_t home;
  std::uint8_t homes; // where it belongs
};

std::uint64_t
event_hash(const Event& event)
{
  return std::hash<std::string>{}(detail::dedupe_key(event));
}

// An event found on one side only, and where its missing copies belong.
struct OneSided
{
  Event event;
  size_t holder = 0;        // a file that has it (index into the walk)
  std::uint8_t missing = 0; // the homes without it
};

// The one-sided events: sightings grouped by event; the holders read again
// for the events themselves (few, in a healthy store none).
std::vector<OneSided>
find_one_sided(int root_fd, const std::vector<StoreFile>& files, std::vector<Sighting>& sightings)
{
  std::sort(sightings.begin(), sightings.end(), [](const Sighting& a, const Sighting& b) {
    return std::tie(a.event, a.file) < std::tie(b.event, b.file);
  });
  std::map<std::uint32_t, std::map<std::uint64_t, std::uint8_t>> wanted; // holder -> event -> missing
  for (size_t first = 0; first < sightings.size();) {
    size_t last = first;
    std::uint8_t seen = 0;
    while (last < sightings.size() && sightings[last].event == sightings[first].event) {
      seen |= sightings[last].home;
      ++last;
    }
    if (const std::uint8_t missing = sightings[first].homes & ~seen; missing != 0) {
      wanted[sightings[first].file][sightings[first].event] = missing;
    }
    first = last;
  }
  std::vector<OneSided> found;
  for (const auto& [holder, events] : wanted) {
    const StoreFile& file = files[holder];
    auto text = read_again(root_fd, file.relative);
    if (!text) {
      continue;
    }
    for (Event& event : check_contents(file, *text).events) {
      if (auto it = events.find(event_hash(event)); it != events.end()) {
        found.push_back({std::move(event), holder, it->second});
      }
    }
  }
  return found;
}

// The hashes of the events in the file at `relative` (none when absent).
std::set<std::uint64_t>
hashes_in(int root_fd, const std::string& relative)
{
  std::set<std::uint64_t> hashes;
  if (auto text = read_again(root_fd, relative)) {
    LogContents contents;
    detail::parse_lines(*text, relative, contents);
    for (const Event& event : contents.events) {
      hashes.insert(event_hash(event));
    }
  }
  return hashes;
}

// Looks at the one-sided events again, reading their holders and missing
// homes once more: a change in progress when the store was read (an append
// between its logs and its index, a gc between its logs and its indexes)
// has finished by now, or, under the change lock held exclusively, has.
void
look_again(int root_fd, const std::vector<StoreFile>& files, std::vector<OneSided>& one_sided)
{
  std::map<std::string, std::set<std::uint64_t>> read;
  auto holds = [&](const std::string& relative, std::uint64_t hash) {
    auto it = read.find(relative);
    if (it == read.end()) {
      it = read.emplace(relative, hashes_in(root_fd, relative)).first;
    }
    return it->second.contains(hash);
  };
  std::erase_if(one_sided, [&](OneSided& item) {
    const std::uint64_t hash = event_hash(item.event);
    if (!holds(files[item.holder].relative, hash)) {
      return true; // taken back, or gone with a gc
    }
    for (const std::uint8_t home : k_homes) {
      if ((item.missing & home) != 0 && holds(home_path(home, item.event), hash)) {
        item.missing &= static_cast<std::uint8_t>(~home);
      }
    }
    return item.missing == 0;
  });
}

std::string
describe_event(const Event& event)
{
  return std::string(event_kind_name(event.event)) + " " + event.digest + " of " + event.project + " " + event.target
         + " " + event.build;
}

// A line of `input`'s reverse index (the manifest it names) as a 64-bit
// hash: what a manifest's entry needs there, and what the file holds, are
// matched in memory by it (8 bytes per line of the store).
std::uint64_t
reverse_hash(const DigestKey& input, std::string_view manifest_hex)
{
  std::string text = input.str();
  text += ' ';
  text += manifest_hex;
  return std::hash<std::string>{}(text);
}

// A manifest file's bytes checked: they decode, in the algorithm of the
// directory they are in, and their digest is the file's name.
Expected<Manifest>
check_manifest(const StoreFile& file, std::string_view bytes)
{
  auto manifest = decode_manifest(bytes, "");
  if (!manifest) {
    return manifest.error();
  }
  if (manifest->algorithm != file.key.algorithm) {
    return Error{"holds a manifest of another digest algorithm ("
                 + std::string(digest::algorithm_name(manifest->algorithm)) + ", in a directory of "
                 + std::string(digest::algorithm_name(file.key.algorithm)) + ")"};
  }
  auto key = manifest_key(file.key.algorithm, bytes);
  if (!key) {
    return key.error();
  }
  if (key->hex != file.key.hex) {
    return Error{"its bytes have the digest " + key->str() + ", not that of its name (damaged since it was written)"};
  }
  return manifest;
}

// The manifest at `relative` read again and decoded; nullopt when it is
// gone or unreadable by now.
std::optional<Manifest>
manifest_again(int root_fd, const StoreFile& file)
{
  auto text = read_again(root_fd, file.relative);
  if (!text || text->empty()) {
    return std::nullopt;
  }
  auto manifest = check_manifest(file, *text);
  return manifest ? std::optional<Manifest>(std::move(*manifest)) : std::nullopt;
}

// The hashes of the lines of `input`'s reverse index (none when absent).
std::set<std::uint64_t>
reverse_hashes_in(int root_fd, const DigestKey& input)
{
  std::set<std::uint64_t> hashes;
  auto text = read_again(root_fd, layout::reverse_index(input));
  std::string_view rest = text ? std::string_view(*text) : std::string_view();
  for (size_t newline = rest.find('\n'); newline != std::string_view::npos; newline = rest.find('\n')) {
    if (auto manifest = parse_reverse_line(rest.substr(0, newline), input.algorithm)) {
      hashes.insert(reverse_hash(input, manifest->hex));
    }
    rest.remove_prefix(newline + 1);
  }
  return hashes;
}

// Whether the file at `relative` below the root exists (of any type).
bool
exists_below(int root_fd, const std::string& relative)
{
  struct stat st
  {};
  return ::fstatat(root_fd, relative.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// Whether the file at `relative` was last changed before `settled`.
bool
older_than(int root_fd, const std::string& relative, std::int64_t settled)
{
  struct stat st
  {};
  return ::fstatat(root_fd, relative.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
         && st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec <= settled;
}

// Whether the log at `relative` holds an event that names manifest `key`.
bool
names_in(int root_fd, const std::string& relative, const std::string& key)
{
  auto text = read_again(root_fd, relative);
  if (!text) {
    return true; // unreadable now: not known to be gone
  }
  LogContents contents;
  detail::parse_lines(*text, relative, contents);
  return std::any_of(contents.events.begin(), contents.events.end(), [&](const Event& event) {
    return names_manifest(event) && event.inputs == key;
  });
}

// Rewrites a reverse index under its exclusive lock with the lines
// `keep_line` keeps (each once, as readers fold them); the original goes to
// `quarantined_as` first. Nothing is rewritten when every line stays and
// the file is the store's own.
struct ReverseRebuild
{
  size_t kept = 0;
  size_t dropped = 0;
  bool changed = false;
};

Expected<ReverseRebuild>
rebuild_reverse(int root_fd,
                const StoreFile& file,
                const std::function<bool(std::string_view)>& keep_line,
                const std::string& quarantined_as)
{
  ReverseRebuild result;
  auto done = detail::replace_locked(
    root_fd,
    file.relative,
    file.relative,
    layout::TempTag::repair,
    true,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      result = ReverseRebuild{};
      detail::Replacement replacement;
      std::set<std::string_view> seen;
      std::string_view rest = log.text;
      while (!rest.empty()) {
        const size_t newline = rest.find('\n');
        if (newline == std::string_view::npos) {
          ++result.dropped; // a torn last line
          break;
        }
        const std::string_view line = rest.substr(0, newline);
        rest.remove_prefix(newline + 1);
        if (line.empty()) {
          continue;
        }
        if (!keep_line(line)) {
          ++result.dropped;
          continue;
        }
        if (seen.insert(line).second) {
          replacement.text += line;
          replacement.text += '\n';
          ++result.kept;
        }
      }
      struct stat st
      {};
      const bool refused = ::fstat(log.fd, &st) == 0 && detail::refused_file(root_fd, st);
      if (result.dropped == 0 && !refused) {
        return detail::Replacement{}; // healthy by now
      }
      ::lseek(log.fd, 0, SEEK_SET);
      if (auto kept = keep_copy(root_fd, log.dir_fd, log.name, log.fd, quarantined_as); !kept) {
        return make_error(file.relative, "cannot keep a copy in the quarantine: " + kept.error().message);
      }
      replacement.action =
        replacement.text.empty() ? detail::Replacement::Action::remove : detail::Replacement::Action::replace;
      result.changed = true;
      return replacement;
    });
  if (!done) {
    return done.error();
  }
  return result;
}

// Replaces a sound manifest the store refuses (a second hard link, a
// foreign owner) by a copy of its own, under the same name; the original
// is kept in the quarantine.
Expected<bool>
recopy_manifest(int root_fd, const StoreFile& file, const std::string& quarantined_as)
{
  bool changed = false;
  auto done = detail::replace_locked(
    root_fd,
    file.relative,
    file.relative,
    layout::TempTag::repair,
    true,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      struct stat st
      {};
      if (::fstat(log.fd, &st) != 0 || !detail::refused_file(root_fd, st)) {
        return detail::Replacement{};
      }
      ::lseek(log.fd, 0, SEEK_SET);
      if (auto kept = keep_copy(root_fd, log.dir_fd, log.name, log.fd, quarantined_as); !kept) {
        return make_error(file.relative, "cannot keep a copy in the quarantine: " + kept.error().message);
      }
      changed = true;
      return detail::Replacement{detail::Replacement::Action::replace, log.text};
    });
  if (!done) {
    return done.error();
  }
  return changed;
}

} // namespace

std::string_view
fsck_kind_name(FsckKind kind)
{
  switch (kind) {
    case FsckKind::torn_line:
      return "torn";
    case FsckKind::leftover:
      return "leftover";
    case FsckKind::one_sided:
      return "one-sided";
    case FsckKind::empty:
      return "empty";
    case FsckKind::damage:
      break;
  }
  return "damage";
}

Expected<FsckReport>
DirectoryStore::fsck(const FsckOptions& options) const
{
  FsckReport report;
  if (!m_root_fd) {
    return report; // no store yet: nothing to check
  }
  const int root_fd = m_root_fd.get();
  // The journal's lines into the reverse index files first: what is
  // checked and mended below is then the files (input_journal.hpp).
  if (options.repair) {
    if (auto folded = fold_input_journals(); !folded) {
      report.warnings.push_back(std::string(layout::k_inputs) + ": the journal could not be folded ("
                                + folded.error().message + "); it was checked as it is");
    }
  }
  const layout::Walk listing = layout::walk(root_fd, layout::WalkScope::everything);
  if (!listing.errors.empty()) {
    const auto& error = listing.errors.front();
    return make_error(m_root + "/" + error.relative, "cannot be listed: " + error.message);
  }
  const size_t total = listing.entries.size();
  std::vector<const StoreFile*> damaged;
  std::vector<std::vector<size_t>> findings_of(total); // indexes into report.findings
  std::set<std::string> damaged_files;
  std::vector<Sighting> sightings;
  std::vector<size_t> empties; // into listing.entries
  const std::int64_t now = util::now_ns();

  // Input manifests (format 2). The walk lists manifests/ before inputs/,
  // so each reverse index line is checked against every manifest.
  std::map<std::string, size_t> sound_manifests;               // key -> walk index: decodes, named by its digest
  std::set<std::string> bad_manifests;                         // damaged beyond use: quarantined by a repair
  std::vector<std::pair<std::uint64_t, std::uint32_t>> needed; // reverse_hash -> manifest, per entry
  bool needed_sorted = false;
  std::set<std::uint64_t> present;             // the reverse index lines found
  std::map<std::string, size_t> reverse_files; // input key -> walk index
  std::set<size_t> dangling_files;             // reverse indexes naming a manifest not in the store
  struct Named
  {
    size_t events = 0;
    size_t holder = 0; // a file with one of them
    std::string example;
  };
  std::map<std::string, Named> named; // manifest key -> the events that name it
  auto is_needed = [&](std::uint64_t hash) {
    if (!needed_sorted) {
      std::sort(needed.begin(), needed.end());
      needed_sorted = true;
    }
    auto it = std::lower_bound(needed.begin(), needed.end(), std::pair<std::uint64_t, std::uint32_t>(hash, 0));
    return it != needed.end() && it->first == hash;
  };

  for (size_t i = 0; i < total; ++i) {
    const StoreFile& file = listing.entries[i];
    const size_t before = report.findings.size();
    if (file.kind == FileKind::stray) {
      report.findings.push_back(
        {file.relative, 0, file.why_stray, file.leftover ? FsckKind::leftover : FsckKind::damage, {}});
    } else {
      switch (file.kind) {
        case FileKind::artifact_log:
          ++report.logs;
          break;
        case FileKind::build_index:
          ++report.build_indexes;
          break;
        case FileKind::manifest:
          ++report.manifests;
          break;
        case FileKind::reverse_index:
          ++report.reverse_indexes;
          reverse_files[file.key.str()] = i;
          break;
        case FileKind::input_journal:
          break;
        case FileKind::provenance:
        case FileKind::stray:
          break;
      }
      auto fd = detail::open_below(root_fd, file.relative, O_RDONLY | O_NONBLOCK, false);
      auto text = fd && fd->valid() ? util::read_all(fd->get()) : Expected<std::string>(std::string());
      struct stat st
      {};
      std::optional<std::string> refused;
      if (fd && fd->valid() && ::fstat(fd->get(), &st) == 0) {
        refused = detail::refused_file(root_fd, st);
      }
      if (refused) {
        report.findings.push_back({file.relative, 0, *refused, FsckKind::damage, {}});
      }
      if (!fd || !text) {
        report.findings.push_back(
          {file.relative, 0, fd ? text.error().message : fd.error().message, FsckKind::damage, {}});
      } else if (file.kind == FileKind::provenance) {
        // Write-once and whole, as a manifest is; nothing else holds a copy.
        if (auto document = parse_provenance(*text, file.build, file.relative); !document) {
          report.findings.push_back({file.relative, 0, document.error().message, FsckKind::damage, {}});
        }
      } else if (file.kind == FileKind::manifest) {
        // Write-once and whole (linked into place complete): an empty one
        // is damage like any other that does not decode.
        auto manifest = check_manifest(file, *text);
        if (!manifest) {
          report.findings.push_back({file.relative, 0, manifest.error().message, FsckKind::damage, {}});
          bad_manifests.insert(file.key.str());
        } else {
          sound_manifests[file.key.str()] = i;
          for (const ManifestEntry& entry : manifest->entries) {
            needed.emplace_back(reverse_hash(DigestKey{manifest->algorithm, entry.hex}, file.key.hex),
                                static_cast<std::uint32_t>(i));
          }
          needed_sorted = false;
        }
      } else if (text->empty() && !refused) {
        empties.push_back(i);
      } else if (file.kind == FileKind::input_journal) {
        const JournalContents journal = parse_journal(*text, file.key.algorithm);
        report.journaled_manifests += journal.entries.size();
        if (journal.torn_tail) {
          report.findings.push_back({file.relative,
                                     journal.entries.size() + journal.unreadable.size() + 1,
                                     "torn last line (a writer died mid-write)",
                                     FsckKind::torn_line,
                                     {}});
        }
        for (const size_t number : journal.unreadable) {
          report.findings.push_back(
            {file.relative, number, "unreadable line: not a journal line (manifest and inputs)", FsckKind::damage, {}});
        }
        for (const JournalEntry& entry : journal.entries) {
          const DigestKey listed{file.key.algorithm, std::string(entry.manifest)};
          const std::string manifest = listed.str();
          const bool sound = sound_manifests.contains(manifest);
          for (const std::string_view input : entry.inputs) {
            const std::uint64_t hash = reverse_hash(DigestKey{file.key.algorithm, std::string(input)}, listed.hex);
            present.insert(hash);
            if (sound && !is_needed(hash)) {
              report.findings.push_back(
                {file.relative,
                 entry.line,
                 "names input manifest " + manifest + " for input " + std::string(input) + ", which it does not list",
                 FsckKind::damage,
                 {}});
              break;
            }
          }
          if (bad_manifests.contains(manifest)) {
            report.findings.push_back({file.relative,
                                       entry.line,
                                       "names input manifest " + manifest + ", which is damaged",
                                       FsckKind::damage,
                                       {}});
          } else if (!sound && !exists_below(root_fd, layout::manifest_file(listed))) {
            report.findings.push_back(
              {file.relative,
               entry.line,
               "names input manifest " + manifest
                 + ", which is not in the store (left by a record call that died before storing it)",
               FsckKind::leftover,
               {}});
            dangling_files.insert(i);
          }
        }
      } else if (file.kind == FileKind::reverse_index) {
        std::string_view rest = *text;
        for (size_t number = 1; !rest.empty(); ++number) {
          const size_t newline = rest.find('\n');
          if (newline == std::string_view::npos) {
            report.findings.push_back(
              {file.relative, number, "torn last line (a writer died mid-write)", FsckKind::torn_line, {}});
            break;
          }
          const std::string_view line = rest.substr(0, newline);
          rest.remove_prefix(newline + 1);
          if (line.empty()) {
            continue;
          }
          auto listed = parse_reverse_line(line, file.key.algorithm);
          if (!listed) {
            report.findings.push_back({file.relative,
                                       number,
                                       "unreadable line: not a reverse index line (a manifest's digest)",
                                       FsckKind::damage,
                                       {}});
            continue;
          }
          const std::uint64_t hash = reverse_hash(file.key, listed->hex);
          present.insert(hash);
          const std::string manifest = listed->str();
          if (sound_manifests.contains(manifest)) {
            if (!is_needed(hash)) {
              report.findings.push_back({file.relative,
                                         number,
                                         "names input manifest " + manifest + ", which does not list this input",
                                         FsckKind::damage,
                                         {}});
            }
          } else if (bad_manifests.contains(manifest)) {
            report.findings.push_back(
              {file.relative, number, "names input manifest " + manifest + ", which is damaged", FsckKind::damage, {}});
          } else if (!exists_below(root_fd, layout::manifest_file(*listed))) {
            // Not one that appeared since the walk (a call storing it now):
            // its reverse index lines come first, the manifest after them.
            report.findings.push_back(
              {file.relative,
               number,
               "names input manifest " + manifest
                 + ", which is not in the store (left by a record call that died before storing it)",
               FsckKind::leftover,
               {}});
            dangling_files.insert(i);
          }
        }
      } else {
        Checked checked = check_contents(file, *text);
        report.events += checked.events.size();
        if (file.kind == FileKind::build_index) {
          // Once per build: its events share the clock that recorded them.
          for (const Event& event : checked.events) {
            if (time_is_in_future(event.time, now, k_future_tolerance_ns)) {
              report.warnings.push_back(file.relative + ": " + event.project + " " + event.build + " is recorded at "
                                        + event.time
                                        + ", in the future (the recording machine's clock was ahead); gc trusts "
                                          "its build tree's sequence over that time");
              break;
            }
          }
        }
        for (const Event& event : checked.events) {
          // An edited signed event: told, not repaired (it reads fine, and
          // no other copy says what it held; its build index's may).
          if (file.kind == FileKind::artifact_log && check_signature(event).state == SignatureCheck::State::invalid) {
            report.warnings.push_back(file.relative + ": " + describe_event(event)
                                      + ": its signature does not hold: the event was changed after it was signed");
          }
          sightings.push_back(
            {event_hash(event), static_cast<std::uint32_t>(i), home_in(file, event), homes_of(event)});
          if (names_manifest(event)) {
            Named& names = named[event.inputs];
            if (names.events++ == 0) {
              names.holder = i;
              names.example = describe_event(event);
            }
          }
        }
        for (auto& finding : checked.findings) {
          report.findings.push_back(std::move(finding));
        }
      }
    }
    for (size_t f = before; f < report.findings.size(); ++f) {
      findings_of[i].push_back(f);
    }
    if (report.findings.size() > before) {
      damaged.push_back(&file);
      damaged_files.insert(file.relative);
    }
    if (options.progress) {
      options.progress(i + 1, total);
    }
  }

  // A manifest that events name and the store does not have: their inputs
  // are lost (no other copy of a manifest is kept). Looked at again first:
  // a gc removes the manifest after the events that name it.
  for (const auto& [manifest, names] : named) {
    if (sound_manifests.contains(manifest) || bad_manifests.contains(manifest)) {
      continue;
    }
    auto key = parse_digest_key(manifest);
    if (!key || exists_below(root_fd, layout::manifest_file(*key))
        || !names_in(root_fd, listing.entries[names.holder].relative, manifest)) {
      continue;
    }
    report.findings.push_back({layout::manifest_file(*key),
                               0,
                               "input manifest " + manifest + ", named by " + std::to_string(names.events)
                                 + " event(s) (" + names.example + " in " + listing.entries[names.holder].relative
                                 + "), is not in the store: the inputs of what was made from it are lost, and no "
                                   "copy of a manifest is kept elsewhere to restore it from",
                               FsckKind::damage,
                               {}});
  }
  // A manifest no event names: a record call that died between storing it
  // and its events, or a gc that died between the two. Looked at again: a
  // call appends its events just after storing the manifest.
  std::vector<size_t> orphans; // into listing.entries
  for (const auto& [manifest, i] : sound_manifests) {
    if (named.contains(manifest) || names_in(root_fd, listing.entries[i].key.log_path(), manifest)) {
      continue;
    }
    orphans.push_back(i);
    findings_of[i].push_back(report.findings.size());
    report.findings.push_back({listing.entries[i].relative,
                               0,
                               "no event names this input manifest (left by a record call that died before its "
                               "events, or a gc that died before removing it)",
                               FsckKind::leftover,
                               {}});
  }
  // A manifest missing from the reverse index of one of its inputs: found
  // by its inputs, it would not be. A call writes those lines before the
  // manifest, a gc removes them before it: looked at again.
  struct MissingLine
  {
    std::string path; // the reverse index
    std::string line;
    std::string manifest;
    size_t finding = 0;
  };
  std::vector<MissingLine> missing_lines;
  {
    std::set<std::uint32_t> incomplete;
    for (const auto& [hash, manifest] : needed) {
      if (!present.contains(hash)) {
        incomplete.insert(manifest);
      }
    }
    std::map<std::string, std::set<std::uint64_t>> read; // reverse index -> its lines, read again
    std::set<std::uint64_t> reported; // an input a manifest lists twice (two paths, two roles) lacks one line
    for (const std::uint32_t i : incomplete) {
      const StoreFile& file = listing.entries[i];
      auto manifest = manifest_again(root_fd, file);
      if (!manifest || std::find(orphans.begin(), orphans.end(), i) != orphans.end()) {
        continue; // gone meanwhile, or an orphan: its finding says what to do
      }
      for (const ManifestEntry& entry : manifest->entries) {
        const DigestKey input{manifest->algorithm, entry.hex};
        const std::uint64_t hash = reverse_hash(input, file.key.hex);
        if (present.contains(hash) || !reported.insert(hash).second) {
          continue;
        }
        auto it = read.find(input.str());
        if (it == read.end()) {
          it = read.emplace(input.str(), reverse_hashes_in(root_fd, input)).first;
        }
        if (it->second.contains(hash)) {
          continue;
        }
        const std::string path = layout::reverse_index(input);
        missing_lines.push_back({path, reverse_line(file.key), file.key.str(), report.findings.size()});
        report.findings.push_back({path,
                                   0,
                                   "does not name input manifest " + file.key.str() + ", which lists this input ("
                                     + std::string(role_name(entry.role)) + " " + entry.path
                                     + "): the manifest would not be found from it (a lost line)",
                                   FsckKind::one_sided,
                                   {}});
      }
    }
  }

  // Events on one side only. Those whose missing copy belongs in a damaged
  // file are restored by its rebuild below (from its counterparts), the
  // rest are appended where they are missing.
  std::vector<OneSided> one_sided = find_one_sided(root_fd, listing.entries, sightings);
  // Held until the repair is done: no change can be in progress meanwhile.
  util::Fd change;
  if (!one_sided.empty() || !empties.empty() || !dangling_files.empty() || !orphans.empty()) {
    if (options.repair) {
      // Bounded: busy appenders can hold it shared without a pause for as
      // long as a build runs (flock() queues no one). Without it, what is
      // younger than k_settle_ns is left for a quieter moment.
      for (int attempt = 0; attempt < 100 && !change; ++attempt) {
        change = detail::change_lock(root_fd, LOCK_EX | LOCK_NB);
        if (!change) {
          ::usleep(10'000);
        }
      }
    }
    look_again(root_fd, listing.entries, one_sided);
    // An append between creating its log and writing it, likewise.
    std::erase_if(empties, [&](size_t i) {
      struct stat st
      {};
      return ::fstatat(root_fd, listing.entries[i].relative.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_size != 0;
    });
  }
  // A copy for a manifest's log only while the store has the manifest:
  // else the event is reported with the manifest.
  std::erase_if(one_sided, [&](OneSided& item) {
    if ((item.missing & in_manifest_log) != 0 && !sound_manifests.contains(item.event.inputs)) {
      item.missing &= static_cast<std::uint8_t>(~in_manifest_log);
    }
    return item.missing == 0;
  });
  std::vector<size_t> one_sided_findings;
  for (const OneSided& item : one_sided) {
    std::string where;
    for (const std::uint8_t home : k_homes) {
      if ((item.missing & home) != 0) {
        where += (where.empty() ? "" : " and ") + home_path(home, item.event);
      }
    }
    const bool index_missing = (item.missing & in_index) != 0;
    one_sided_findings.push_back(report.findings.size());
    report.findings.push_back(
      {listing.entries[item.holder].relative,
       0,
       describe_event(item.event) + " is missing from " + where
         + (index_missing ? " (a record call that did not finish)" : " (an interrupted gc, or a lost line)"),
       FsckKind::one_sided,
       {}});
  }
  for (const size_t i : empties) {
    findings_of[i].push_back(report.findings.size());
    report.findings.push_back({listing.entries[i].relative,
                               0,
                               "empty log (left by a record call that failed or was killed before writing)",
                               FsckKind::empty,
                               {}});
  }
  if (!options.repair) {
    check_build_summaries(*this, report, false, std::string(k_build_summary_file));
    check_index_pack(report, false);
    check_path_index(report, false);
    return report;
  }

  // Without the change lock, what a change in progress may still be
  // writing is left alone.
  const std::int64_t settled = now - k_settle_ns;
  const std::string left_alone = " (left alone: less than a minute old while the store was busy, so its change may "
                                 "still be running; run fingerprint fsck --repair again later)";
  for (const size_t i : empties) {
    const StoreFile& file = listing.entries[i];
    if (!change && !older_than(root_fd, file.relative, settled)) {
      report.findings[findings_of[i].back()].problem += left_alone;
      continue;
    }
    auto removed = detail::replace_locked(
      root_fd, file.relative, file.relative, layout::TempTag::repair, true, [](const detail::LockedLog& log) {
        detail::Replacement replacement;
        if (log.text.empty()) { // else an appender got there first: it is a log now
          replacement.action = detail::Replacement::Action::remove;
        }
        return Expected<detail::Replacement>(replacement);
      });
    const std::string repair = removed ? "removed (it held nothing)" : std::string();
    auto& finding = report.findings[findings_of[i].back()];
    if (removed || removed.error().message.ends_with("no such log")) {
      finding.repair = removed ? repair : "already gone";
      ++report.repaired;
    } else {
      finding.problem += " (not repaired: " + removed.error().message + ")";
    }
  }
  for (size_t n = 0; n < one_sided.size(); ++n) {
    const OneSided& item = one_sided[n];
    auto& finding = report.findings[one_sided_findings[n]];
    if (!change && util::parse_rfc3339(item.event.time) > settled) {
      finding.problem += left_alone;
      continue;
    }
    std::string restored;
    std::string failed;
    for (const std::uint8_t home : k_homes) {
      if ((item.missing & home) == 0) {
        continue;
      }
      const std::string path = home_path(home, item.event);
      if (damaged_files.contains(path)) {
        restored += (restored.empty() ? "" : "; ") + std::string("restored by the rebuild of ") + path;
        continue;
      }
      auto line = serialize_for_storing(item.event);
      auto appended = line ? append_line(path, *line, nullptr) : Expected<detail::Appended>(line.error());
      if (appended) {
        restored += (restored.empty() ? "" : "; ") + std::string("appended to ") + path;
        ++report.events_restored;
      } else {
        failed = appended.error().message;
      }
    }
    if (failed.empty()) {
      finding.repair = restored;
      ++report.repaired;
    } else {
      finding.problem += " (not repaired: " + failed + ")";
    }
  }

  // An orphaned manifest goes to the quarantine, its reverse index lines
  // with it; only once it is a minute old, even under the change lock: a
  // record call stores its manifest and appends its events as two changes.
  std::set<size_t> orphaned;
  for (const size_t i : orphans) {
    const StoreFile& file = listing.entries[i];
    if (!older_than(root_fd, file.relative, settled)) {
      report.findings[findings_of[i].back()].problem +=
        " (left alone: less than a minute old, so the record call that stored it may still be running)";
      continue;
    }
    orphaned.insert(i);
    damaged.push_back(&file);
    if (auto manifest = manifest_again(root_fd, file)) {
      for (const ManifestEntry& entry : manifest->entries) {
        if (auto it = reverse_files.find(DigestKey{manifest->algorithm, entry.hex}.str()); it != reverse_files.end()) {
          damaged.push_back(&listing.entries[it->second]);
        }
      }
    }
  }
  // In walk order (manifests before the reverse indexes that name them), once each.
  std::sort(damaged.begin(), damaged.end());
  damaged.erase(std::unique(damaged.begin(), damaged.end()), damaged.end());

  std::set<std::string> quarantined_manifests;
  if (!damaged.empty()) {
    report.quarantine = layout::quarantine_run(util::now_ns());
  }
  const auto counterparts = damaged.empty() ? std::map<std::string, std::vector<Event>>()
                                            : gather_counterparts(root_fd, listing.entries, damaged);
  static const std::vector<Event> k_none;
  for (const StoreFile* file : damaged) {
    const size_t index = static_cast<size_t>(file - listing.entries.data());
    const std::string quarantined_as = report.quarantine + "/" + file->relative;
    auto not_repaired = [&](const std::string& why) {
      if (!findings_of[index].empty()) {
        report.findings[findings_of[index].front()].problem += " (not repaired: " + why + ")";
      }
    };
    std::string repair;
    const bool sound = file->kind == FileKind::manifest && sound_manifests.contains(file->key.str());
    if (file->kind == FileKind::stray || file->kind == FileKind::provenance
        || (file->kind == FileKind::manifest && (!sound || orphaned.contains(index)))) {
      auto moved = move_aside(root_fd, file->relative, quarantined_as);
      if (!moved) {
        not_repaired(moved.error().message);
        continue;
      }
      repair = "moved to " + quarantined_as;
      if (file->kind == FileKind::manifest) {
        quarantined_manifests.insert(file->key.str());
      }
    } else if (file->kind == FileKind::manifest) {
      auto recopied = recopy_manifest(root_fd, *file, quarantined_as);
      if (!recopied) {
        not_repaired(recopied.error().message);
        continue;
      }
      repair =
        *recopied ? "original moved to " + quarantined_as + "; replaced by a copy of its own" : "already repaired";
    } else if (file->kind == FileKind::reverse_index || file->kind == FileKind::input_journal) {
      if (!change && dangling_files.contains(index) && !older_than(root_fd, file->relative, settled)) {
        for (const size_t f : findings_of[index]) {
          report.findings[f].problem += left_alone;
        }
        continue;
      }
      const DigestKey& input = file->key;
      // Whether a line naming `listed` for `inputs` stays.
      auto keep_manifest = [&](const DigestKey& listed, const std::vector<std::string_view>& inputs) {
        const std::string manifest = listed.str();
        if (quarantined_manifests.contains(manifest) || bad_manifests.contains(manifest)) {
          return false;
        }
        if (sound_manifests.contains(manifest)) {
          return std::all_of(inputs.begin(), inputs.end(), [&](std::string_view hex) {
            return is_needed(reverse_hash(DigestKey{listed.algorithm, std::string(hex)}, listed.hex));
          });
        }
        // One that appeared since the walk stays.
        return exists_below(root_fd, layout::manifest_file(listed));
      };
      auto keep_line = [&](std::string_view line) {
        if (file->kind == FileKind::input_journal) {
          const JournalContents one = parse_journal_line(line, input.algorithm);
          return one.entries.size() == 1
                 && keep_manifest(DigestKey{input.algorithm, std::string(one.entries[0].manifest)},
                                  one.entries[0].inputs);
        }
        auto listed = parse_reverse_line(line, input.algorithm);
        return listed && keep_manifest(*listed, {input.hex});
      };
      auto rebuilt = rebuild_reverse(root_fd, *file, keep_line, quarantined_as);
      if (!rebuilt) {
        not_repaired(rebuilt.error().message);
        continue;
      }
      repair = rebuilt->changed
                 ? "original moved to " + quarantined_as + "; rewritten with " + std::to_string(rebuilt->kept)
                     + " line(s), " + std::to_string(rebuilt->dropped) + " dropped"
                 : "already repaired";
    } else {
      auto extra = counterparts.find(file->relative);
      auto rebuilt = rebuild_log(root_fd, *file, extra == counterparts.end() ? k_none : extra->second, quarantined_as);
      if (!rebuilt) {
        not_repaired(rebuilt.error().message);
        continue;
      }
      report.events_restored += rebuilt->restored;
      repair =
        rebuilt->changed
          ? "original moved to " + quarantined_as + "; rebuilt with " + std::to_string(rebuilt->kept)
              + " readable events"
              + (rebuilt->restored > 0 ? " and " + std::to_string(rebuilt->restored) + " restored from "
                                           + (file->kind == FileKind::artifact_log ? "build indexes" : "artifact logs")
                                       : std::string())
          : "already repaired";
    }
    for (size_t f : findings_of[index]) {
      report.findings[f].repair = repair;
      ++report.repaired;
    }
  }

  // Last, once the damaged reverse indexes are rewritten: the lines of
  // manifests that are missing from them (readers fold a line twice).
  for (const MissingLine& missing : missing_lines) {
    auto& finding = report.findings[missing.finding];
    if (quarantined_manifests.contains(missing.manifest)) {
      finding.repair = "none needed: the manifest went to the quarantine";
      ++report.repaired;
      continue;
    }
    auto appended = append_line(missing.path, missing.line, nullptr);
    if (appended) {
      finding.repair = "appended the line " + missing.line;
      ++report.repaired;
    } else {
      finding.problem += " (not repaired: " + appended.error().message + ")";
    }
  }
  // Last, once the logs and indexes are mended: the summary made from them.
  check_build_summaries(*this, report, true, std::string(k_build_summary_file));
  check_index_pack(report, true);
  check_path_index(report, true);
  return report;
}

} // namespace fingerprint::store
