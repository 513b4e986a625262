#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/gc.hpp>
#include <fingerprint/store/input_journal.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/store/time_check.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <sys/stat.h>

namespace fingerprint::store {

namespace {

struct UnitFacts
{
  std::string host;
  std::string build_dir;
  std::string newest; // RFC 3339: sorts by time
};

// A build id the CMake module counted: "<n>-<8 hex>" (hook/build_id.hpp).
struct Sequenced
{
  unsigned long long number = 0;
  std::string tag;
};

std::optional<Sequenced>
sequenced(std::string_view build)
{
  const auto dash = build.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash > 18 || !util::is_lower_hex(build.substr(dash + 1), 8)) {
    return std::nullopt;
  }
  Sequenced id;
  for (const char c : build.substr(0, dash)) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    id.number = id.number * 10 + static_cast<unsigned long long>(c - '0');
  }
  id.tag = std::string(build.substr(dash + 1));
  return id;
}

// What gc goes by for each (project, build): its newest time, lowered to
// the newest time of a later build of its tree where that is earlier and
// its own is in the future (GcTimeCorrection). Only a time in the future is
// lowered: a later build whose clock was behind (a machine booted at 1970)
// must not make every build before it look old enough to collect. Only
// builds with a sequenced id are in the map.
std::map<std::pair<std::string, std::string>, int64_t>
sequence_times(const std::map<GcUnit, UnitFacts>& units, int64_t now_ns, std::vector<GcTimeCorrection>& corrections)
{
  struct Build
  {
    unsigned long long number = 0;
    std::string build;
    std::string newest;
  };
  std::map<std::pair<std::string, std::string>, std::map<std::string, Build>> trees; // (project, tag) -> builds
  for (const auto& [unit, facts] : units) {
    if (auto id = sequenced(unit.build)) {
      auto& build = trees[{unit.project, id->tag}][unit.build];
      build.number = id->number;
      build.build = unit.build;
      build.newest = std::max(build.newest, facts.newest);
    }
  }
  std::map<std::pair<std::string, std::string>, int64_t> times;
  for (auto& [tree, builds] : trees) {
    std::vector<Build*> order;
    for (auto& [name, build] : builds) {
      order.push_back(&build);
    }
    std::sort(order.begin(), order.end(), [](const Build* a, const Build* b) { return a->number > b->number; });
    int64_t later = -1; // the earliest newest time of the builds after this one
    const Build* later_build = nullptr;
    for (const Build* build : order) {
      int64_t when = util::parse_rfc3339(build->newest);
      if (when >= 0 && later >= 0 && later < when && time_is_in_future(build->newest, now_ns, k_future_tolerance_ns)) {
        corrections.push_back(
          {tree.first, build->build, build->newest, util::format_rfc3339(later), later_build->build});
        when = later;
      }
      times[{tree.first, build->build}] = when;
      if (when >= 0 && (later < 0 || when < later)) {
        later = when;
        later_build = build;
      }
    }
  }
  std::sort(corrections.begin(), corrections.end(), [](const auto& a, const auto& b) {
    return std::tie(a.project, a.build) < std::tie(b.project, b.build);
  });
  return times;
}

// Only "it is not there" drops; a tree we may not look into stays.
bool
tree_exists(const std::string& build_dir)
{
  struct stat st
  {};
  return ::stat(build_dir.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

} // namespace

size_t
GcPlan::builds_dropped() const
{
  std::set<std::pair<std::string, std::string>> builds;
  for (const auto& unit : dropped) {
    builds.emplace(unit.project, unit.build);
  }
  return builds.size();
}

Expected<GcPlan>
plan_gc(const Store& store, const GcPolicy& policy, const GcProgress& progress)
{
  auto builds = store.list_builds();
  if (!builds) {
    return builds.error();
  }
  GcPlan plan;
  plan.builds_seen = builds->size();

  // Every (project, target, build) with its host, tree and newest time.
  std::map<GcUnit, UnitFacts> units;
  size_t done = 0;
  auto read = store.for_each_build({}, [&](const BuildRef&, LogContents& index) {
    plan.problems.insert(plan.problems.end(), index.problems.begin(), index.problems.end());
    for (const auto& event : index.events) {
      auto& facts = units[{event.project, event.target, event.build}];
      facts.host = event.host;
      facts.build_dir = event.build_dir;
      facts.newest = std::max(facts.newest, event.time);
    }
    if (progress) {
      progress(++done, plan.builds_seen);
    }
  });
  if (!read) {
    return read.error();
  }

  const auto corrected = sequence_times(units, policy.now_ns, plan.corrections);

  // Newest first: by time, then, within one tree (whose times are in
  // sequence order once corrected), by sequence.
  struct Ranked
  {
    int64_t when = -1;
    unsigned long long number = 0;
    GcUnit unit;
  };
  std::map<std::string, bool> exists; // build tree -> whether it is there
  // --keep-builds counts each target's builds per build tree: a newer
  // tree's builds must not push out an older tree's, still installed.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<Ranked>> by_target;
  for (const auto& [unit, facts] : units) {
    int64_t when = util::parse_rfc3339(facts.newest);
    const auto in_tree = corrected.find({unit.project, unit.build});
    if (in_tree != corrected.end() && in_tree->second >= 0 && (when < 0 || in_tree->second < when)) {
      when = in_tree->second;
    }
    bool drop = false;
    if (policy.missing_build_dirs && facts.host == policy.host) {
      auto [it, inserted] = exists.try_emplace(facts.build_dir, false);
      if (inserted) {
        it->second = tree_exists(facts.build_dir);
      }
      drop = !it->second;
    }
    if (policy.max_age_ns >= 0) {
      drop = drop || (when >= 0 && policy.now_ns - when > policy.max_age_ns);
    }
    if (drop) {
      plan.dropped.insert(unit);
    } else if (policy.keep_builds > 0) {
      // A sequenced build ranks by its tree's corrected time (the same for
      // all its targets), so that one target's order follows the sequence.
      auto& list = by_target[{unit.project, unit.target, facts.host, facts.build_dir}];
      if (in_tree != corrected.end()) {
        list.push_back({in_tree->second, sequenced(unit.build)->number, unit});
      } else {
        list.push_back({when, 0, unit});
      }
    }
  }
  for (auto& [target, list] : by_target) {
    std::sort(list.begin(), list.end(), [](const Ranked& a, const Ranked& b) {
      return std::tie(a.when, a.number, a.unit.build) > std::tie(b.when, b.number, b.unit.build);
    });
    for (size_t i = static_cast<size_t>(policy.keep_builds); i < list.size(); ++i) {
      plan.dropped.insert(list[i].unit);
    }
  }

  // What goes, per build: for people to read before it goes.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, GcDroppedBuild> dropped_builds;
  for (const GcUnit& unit : plan.dropped) {
    const UnitFacts& facts = units.at(unit);
    auto& build = dropped_builds[{unit.project, unit.build, facts.host, facts.build_dir}];
    build.project = unit.project;
    build.build = unit.build;
    build.host = facts.host;
    build.build_dir = facts.build_dir;
    build.newest = std::max(build.newest, facts.newest);
    build.targets.push_back(unit.target);
  }
  for (auto& [key, build] : dropped_builds) {
    plan.dropped_builds.push_back(std::move(build));
  }
  std::stable_sort(plan.dropped_builds.begin(), plan.dropped_builds.end(), [](const auto& a, const auto& b) {
    return std::tie(a.project, a.newest) < std::tie(b.project, b.newest);
  });
  return plan;
}

namespace {

// `text` without its complete lines that `goes` takes (given a line without
// its newline); every other byte as it was, a torn last line too (fsck's to
// judge). Sets `dropped` to the lines taken out.
std::string
without_lines(std::string_view text, const std::function<bool(std::string_view line)>& goes, size_t& dropped)
{
  std::string kept;
  dropped = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline == std::string_view::npos ? text.size() : newline + 1);
    text.remove_prefix(line.size());
    if (newline != std::string_view::npos && goes(line.substr(0, line.size() - 1))) {
      ++dropped;
      continue;
    }
    kept += line;
  }
  return kept;
}

// What removing a batch of manifests did, or in a dry run would do.
struct ManifestRemoval
{
  size_t removed = 0;
  GcResult::Files reverse;
  std::vector<std::string> failures;
};

// Takes the lines `goes` takes out of the index file `relative` (a reverse
// index or the journal), under its lock, and counts the file as rewritten or
// removed. When that fails, the manifests `hexes` it lists stay, whole.
void
drop_index_lines(const DirectoryStore& store,
                 int root_fd,
                 const std::string& relative,
                 const std::set<std::string>& hexes,
                 const std::function<bool(std::string_view line)>& goes,
                 bool dry_run,
                 ManifestRemoval& result,
                 std::set<std::string>& staying)
{
  bool emptied = false;
  size_t dropped = 0;
  auto done = detail::replace_locked(root_fd,
                                     relative,
                                     store.root() + "/" + relative,
                                     layout::TempTag::compact,
                                     !dry_run,
                                     [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
                                       detail::Replacement replacement;
                                       std::string kept = without_lines(log.text, goes, dropped);
                                       emptied = kept.empty();
                                       if (dropped == 0 || dry_run) {
                                         return replacement;
                                       }
                                       replacement.action = emptied ? detail::Replacement::Action::remove
                                                                    : detail::Replacement::Action::replace;
                                       replacement.text = std::move(kept);
                                       return replacement;
                                     });
  if (!done && !done.error().message.ends_with("no such log")) {
    result.failures.push_back(done.error().message);
    staying.insert(hexes.begin(), hexes.end());
  } else if (done && dropped > 0) {
    (emptied ? result.reverse.removed : result.reverse.rewritten) += 1;
  }
}

// Removes those input manifests `keys` of a directory store whose logs hold
// no event (no user is left), with their lines in their inputs' reverse
// indexes. Each under the exclusive lock of its log, created empty when gone
// for the while: a record call that reuses a manifest appends its event to
// that log, so it either went first (and the manifest stays) or waits and
// finds the manifest gone (and stores it again, hook/recorder.cpp). The
// reverse index lines go before the manifests: a manifest the store has is
// listed under each of its inputs. Each reverse index is rewritten once per
// batch, for every manifest of the batch it lists (a library that 100 old
// manifests list is rewritten once, not 100 times). A dry run reads only.
ManifestRemoval
remove_unused_manifests(const DirectoryStore& store, int root_fd, const std::vector<DigestKey>& keys, bool dry_run)
{
  ManifestRemoval result;
  struct Going
  {
    DigestKey key;
    std::optional<detail::HeldLog> held;
  };
  std::vector<Going> going;
  std::map<std::string, std::set<std::string>> going_from; // input -> the hex of each manifest going that lists it
  for (const DigestKey& key : keys) {
    Going item{key, std::nullopt};
    if (!dry_run) {
      const std::string log_path = key.log_path();
      auto log = detail::hold_log(root_fd, log_path, store.root() + "/" + log_path);
      if (!log) {
        result.failures.push_back(log.error().message);
        continue;
      }
      auto text = util::read_all(log->fd.get());
      if (!text) {
        result.failures.push_back(store.root() + "/" + log_path + ": " + text.error().message);
        continue;
      }
      LogContents contents;
      detail::parse_lines(*text, log_path, contents);
      if (!contents.events.empty() || !contents.problems.empty() || contents.torn_tail) {
        continue; // a user came, or lines fsck must look at: it stays
      }
      item.held = std::move(*log);
    }
    auto manifest = store.read_manifest(key);
    if (!manifest || !*manifest) {
      if (!manifest) {
        result.failures.push_back(manifest.error().message); // damaged: fsck's to quarantine
      }
      if (item.held) {
        detail::remove_held_if_empty(*item.held);
      }
      continue;
    }
    for (const ManifestEntry& entry : (*manifest)->entries) {
      going_from[DigestKey{key.algorithm, entry.hex}.str()].insert(key.hex);
    }
    going.push_back(std::move(item));
  }
  std::set<std::string> staying; // manifests whose lines could not all go: they stay, listed whole
  for (const auto& [input_name, listed] : going_from) {
    const std::set<std::string>& hexes = listed; // a lambda below uses it: clang 14 captures no binding
    auto input = parse_digest_key(input_name);
    if (!input) {
      continue;
    }
    const digest::Algorithm algorithm = input->algorithm;
    drop_index_lines(
      store,
      root_fd,
      layout::reverse_index(*input),
      hexes,
      [&](std::string_view line) {
        auto manifest = parse_reverse_line(line, algorithm);
        return manifest && hexes.contains(manifest->hex);
      },
      dry_run,
      result,
      staying);
  }
  // And the journal's lines that name them (input_journal.hpp): a line
  // names one manifest, so it goes whole.
  std::map<digest::Algorithm, std::set<std::string>> going_by_algorithm;
  for (const Going& item : going) {
    going_by_algorithm[item.key.algorithm].insert(item.key.hex);
  }
  for (const auto& [algorithm, listed] : going_by_algorithm) {
    const std::set<std::string>& hexes = listed; // captured below: clang 14 captures no binding
    const digest::Algorithm journal_algorithm = algorithm;
    drop_index_lines(
      store,
      root_fd,
      layout::input_journal(algorithm),
      hexes,
      [&](std::string_view line) {
        const JournalContents one = parse_journal_line(line, journal_algorithm);
        return one.entries.size() == 1 && hexes.contains(std::string(one.entries.front().manifest));
      },
      dry_run,
      result,
      staying);
  }
  for (Going& item : going) {
    if (!staying.contains(item.key.hex)) {
      const std::string relative = layout::manifest_file(item.key);
      const auto [dir, name] = util::split_last(relative);
      auto dir_fd = dry_run ? Expected<util::Fd>(util::Fd()) : util::open_directory_beneath(root_fd, dir, false);
      if (!dir_fd) {
        result.failures.push_back(store.root() + "/" + relative + ": " + dir_fd.error().message);
      } else if (dir_fd->valid() && ::unlinkat(dir_fd->get(), std::string(name).c_str(), 0) != 0 && errno != ENOENT) {
        result.failures.push_back(store.root() + "/" + relative + ": cannot remove: " + util::errno_text(errno));
      } else {
        if (dir_fd->valid()) {
          (void)util::fsync_directory(dir_fd->get());
        }
        ++result.removed;
      }
    }
    if (item.held) {
      detail::remove_held_if_empty(*item.held);
    }
  }
  return result;
}

} // namespace

GcResult
apply_gc(const Store& store, const GcPlan& plan, bool dry_run, const GcProgress& progress)
{
  GcResult result;
  auto is_dropped = [&](const Event& event) {
    return plan.dropped.contains({event.project, event.target, event.build});
  };

  // The logs those units wrote to: from their builds' indexes.
  std::map<std::string, std::set<std::pair<std::string, std::string>>> logs; // digest -> builds with events there
  std::set<std::pair<std::string, std::string>> touched_builds;
  std::set<std::string> manifests;   // the input manifests their products were made from
  std::set<std::string> still_named; // manifests named by events that stay
  for (const auto& unit : plan.dropped) {
    touched_builds.emplace(unit.project, unit.build);
  }
  for (const auto& [project, build] : touched_builds) {
    auto index = store.read_build({project, build});
    if (!index) {
      result.failures.push_back(index.error().message);
      continue;
    }
    for (const auto& event : index->events) {
      const bool made = event.event == EventKind::produced && !event.inputs.empty();
      if (is_dropped(event)) {
        logs[event.digest].emplace(project, build);
        if (event.event == EventKind::installed && event.from != event.digest) {
          logs[event.from].emplace(project, build); // its link in the origin's log
        }
        if (made) {
          logs[event.inputs].emplace(project, build); // its copy in the manifest's log
          manifests.insert(event.inputs);
        }
      } else if (made) {
        still_named.insert(event.inputs);
      }
    }
  }

  // Logs first, indexes last: one-sided meanwhile, which fsck --repair must
  // not take for damage.
  const util::Fd change = dry_run ? util::Fd() : store.hold_for_change();
  size_t done = 0;
  std::set<std::pair<std::string, std::string>> unfinished; // builds a log kept events of
  std::set<std::string> unused;                             // manifests whose log is left empty (or was gone)
  for (const auto& [digest, builds] : logs) {
    auto key = parse_digest_key(digest);
    auto removed = key ? store.remove_events(*key, is_dropped, dry_run) : Expected<CompactionResult>(key.error());
    if (!removed && removed.error().message.ends_with("no such log")) {
      // Gone already: an interrupted gc removed it before its indexes.
      removed = CompactionResult{0, 0, true};
    }
    if (!removed && removed.error().message.ends_with(util::errno_text(EACCES))) {
      // Every other log would say the same: said once, and nothing more is
      // tried (each build whose logs were not all done keeps its index).
      result.failures.push_back(removed.error().message
                                + " (this user may read the store but not change it: run gc as its owner)");
      for (const auto& [other, other_builds] : logs) {
        unfinished.insert(other_builds.begin(), other_builds.end());
      }
      break;
    }
    if (!removed) {
      result.failures.push_back(removed.error().message);
      unfinished.insert(builds.begin(), builds.end());
    } else {
      if (removed->events_after != removed->events_before) {
        result.events_dropped += removed->events_before - removed->events_after;
        (removed->removed ? result.logs.removed : result.logs.rewritten) += 1;
      }
      if (removed->removed && manifests.contains(digest)) {
        unused.insert(digest);
      }
    }
    if (progress) {
      progress(++done, logs.size());
    }
  }
  // The indexes last (see apply_gc's comment in gc.hpp).
  for (const auto& [project, build] : touched_builds) {
    if (unfinished.contains({project, build})) {
      // A log still holds some of its events: its index keeps them too, so
      // the store stays whole and the next gc knows what is left to do.
      continue;
    }
    auto removed = store.remove_build_events({project, build}, is_dropped, dry_run);
    if (!removed) {
      result.failures.push_back(removed.error().message);
    } else {
      (removed->removed ? result.indexes.removed : result.indexes.rewritten) += 1;
      // A build with no event left has no use for its provenance.
      if (removed->removed) {
        if (auto gone = store.remove_provenance({project, build}, dry_run); !gone) {
          result.failures.push_back(gone.error().message);
        } else if (*gone) {
          ++result.provenance_removed;
        }
      }
    }
  }

  // Then the manifests no event names any more (only a directory store keeps
  // them as files). Never one still named by an event that stays.
  const auto* directory = dynamic_cast<const DirectoryStore*>(&store);
  if (directory == nullptr && !unused.empty()) {
    // A database removes them in one statement (entries with them).
    std::vector<DigestKey> keys;
    for (const std::string& digest : unused) {
      if (auto key = parse_digest_key(digest); key && !still_named.contains(digest)) {
        keys.push_back(std::move(*key));
      }
    }
    if (auto removed = store.remove_unused_manifests(keys, dry_run)) {
      result.manifests.removed += *removed;
    } else {
      result.failures.push_back(removed.error().message);
    }
    return result;
  }
  if (directory == nullptr || unused.empty() || !directory->exists()) {
    return result;
  }
  auto root = util::open_directory(directory->root(), false);
  if (!root) {
    result.failures.push_back(directory->root() + ": " + root.error().message);
    return result;
  }
  // In batches: each holds its manifests' log locks (two descriptors each)
  // while it rewrites their inputs' reverse indexes.
  constexpr size_t k_batch = 128;
  std::vector<DigestKey> batch;
  auto remove_batch = [&] {
    ManifestRemoval removal = remove_unused_manifests(*directory, root->get(), batch, dry_run);
    result.manifests.removed += removal.removed;
    result.reverse_indexes.rewritten += removal.reverse.rewritten;
    result.reverse_indexes.removed += removal.reverse.removed;
    result.failures.insert(result.failures.end(), removal.failures.begin(), removal.failures.end());
    batch.clear();
  };
  for (const std::string& digest : unused) {
    auto key = parse_digest_key(digest);
    if (key && !still_named.contains(digest)) {
      batch.push_back(std::move(*key));
    }
    if (batch.size() == k_batch) {
      remove_batch();
    }
  }
  if (!batch.empty()) {
    remove_batch();
  }
  return result;
}

} // namespace fingerprint::store
