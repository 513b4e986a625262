#pragma once

// Retention, driven by the build index: which builds go is decided from the
// build indexes alone (plan_gc); then only the artifact logs those builds
// wrote to are read and rewritten, never a scan of every log (apply_gc).

#include <fingerprint/store/store.hpp>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace fingerprint::store {

// What goes. Each rule drops on its own; a unit any rule drops goes.
struct GcPolicy
{
  // Builds on `host` whose build tree no longer exists.
  bool missing_build_dirs = false;
  std::string host;
  // Builds whose newest event is older than this (-1: no age limit).
  int64_t max_age_ns = -1;
  int64_t now_ns = 0;
  // Keep only the newest N builds of each project and target (-1: all).
  long keep_builds = -1;
};

// What gc decides about: one target's part of one build.
struct GcUnit
{
  std::string project;
  std::string target;
  std::string build;

  bool
  operator<(const GcUnit& other) const
  {
    return std::tie(project, target, build) < std::tie(other.project, other.target, other.build);
  }
};

struct GcPlan
{
  size_t builds_seen = 0;
  std::set<GcUnit> dropped;
  std::vector<LogProblem> problems; // unreadable lines met in the build index

  // How many (project, build) pairs lose events.
  size_t builds_dropped() const;
};

struct GcResult
{
  // Files that lost events: rewritten with the rest, or removed when
  // nothing was left.
  struct Files
  {
    size_t rewritten = 0;
    size_t removed = 0;
  };
  Files logs;
  Files indexes;
  size_t events_dropped = 0;
  std::vector<std::string> failures; // gc went on past each
};

// (done, total) as the build indexes are read, or the artifact logs rewritten.
using GcProgress = std::function<void(size_t, size_t)>;

// Reads the build index and decides what goes; changes nothing.
Expected<GcPlan> plan_gc(const Store& store, const GcPolicy& policy, const GcProgress& progress = {});

// Drops the plan's events: from the artifact logs first, the build indexes
// last, so that an interrupted gc leaves indexes that still name every log
// it had not cleaned yet, and a second run finishes. With `dry_run`, only
// counts.
GcResult apply_gc(const Store& store, const GcPlan& plan, bool dry_run, const GcProgress& progress = {});

} // namespace fingerprint::store
