#include <fingerprint/store/gc.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <sys/stat.h>

namespace fingerprint::store {

namespace {

struct UnitFacts
{
  std::string host;
  std::string build_dir;
  std::string newest; // RFC 3339: sorts by time
};

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

  std::map<std::string, bool> exists; // build tree -> whether it is there
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, GcUnit>>> by_target;
  for (const auto& [unit, facts] : units) {
    bool drop = false;
    if (policy.missing_build_dirs && facts.host == policy.host) {
      auto [it, inserted] = exists.try_emplace(facts.build_dir, false);
      if (inserted) {
        it->second = tree_exists(facts.build_dir);
      }
      drop = !it->second;
    }
    if (policy.max_age_ns >= 0) {
      const int64_t when = util::parse_rfc3339(facts.newest);
      drop = drop || (when >= 0 && policy.now_ns - when > policy.max_age_ns);
    }
    if (drop) {
      plan.dropped.insert(unit);
    } else if (policy.keep_builds > 0) {
      by_target[{unit.project, unit.target}].emplace_back(facts.newest, unit);
    }
  }
  for (auto& [target, list] : by_target) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = static_cast<size_t>(policy.keep_builds); i < list.size(); ++i) {
      plan.dropped.insert(list[i].second);
    }
  }
  return plan;
}

GcResult
apply_gc(const Store& store, const GcPlan& plan, bool dry_run, const GcProgress& progress)
{
  GcResult result;
  auto is_dropped = [&](const Event& event) {
    return plan.dropped.contains({event.project, event.target, event.build});
  };

  // The logs those units wrote to: from their builds' indexes.
  std::set<std::string> logs; // digests
  std::set<std::pair<std::string, std::string>> touched_builds;
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
      if (is_dropped(event)) {
        logs.insert(event.digest);
        if (event.event == EventKind::installed && event.from != event.digest) {
          logs.insert(event.from); // its link in the origin's log
        }
      }
    }
  }

  size_t done = 0;
  for (const auto& digest : logs) {
    auto key = parse_digest_key(digest);
    auto removed = key ? store.remove_events(*key, is_dropped, dry_run) : Expected<CompactionResult>(key.error());
    if (!removed) {
      result.failures.push_back(removed.error().message);
    } else if (removed->events_after != removed->events_before) {
      result.events_dropped += removed->events_before - removed->events_after;
      (removed->removed ? result.logs.removed : result.logs.rewritten) += 1;
    }
    if (progress) {
      progress(++done, logs.size());
    }
  }
  // The indexes last (see apply_gc's comment in gc.hpp).
  for (const auto& [project, build] : touched_builds) {
    auto removed = store.remove_build_events({project, build}, is_dropped, dry_run);
    if (!removed) {
      result.failures.push_back(removed.error().message);
    } else {
      (removed->removed ? result.indexes.removed : result.indexes.rewritten) += 1;
    }
  }
  return result;
}

} // namespace fingerprint::store
