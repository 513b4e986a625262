#pragma once

// Retention, driven by the build index: which builds go is decided from the
// build indexes alone (plan_gc); then only the artifact logs those builds
// wrote to are read and rewritten, never a scan of every log (apply_gc).
// A produced event's `inputs` names its input manifest, whose log holds a
// copy of it: the manifests those builds used are found the same way, and
// one left with no users goes with its reverse index lines.

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
  // Keep only the newest N builds of each project and target in each build
  // tree (-1: all). Newest by time, but by sequence within one build tree
  // (GcTimeCorrection).
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

// A build whose recorded time gc did not trust. The builds of one build
// tree are numbered in the order they ran ("<n>-<tag>", the ids the CMake
// module counts); a clock that was ahead when build n ran gives it a newest
// time after that of a later build n+k of the same tree. Such a build is
// taken to be as old as the oldest of its tree's later builds: otherwise
// --keep-builds keeps it over the real newest build, and --older-than never
// collects it.
struct GcTimeCorrection
{
  std::string project;
  std::string build;
  std::string recorded;    // its newest event's time
  std::string taken;       // the time gc went by
  std::string later_build; // the later build of its tree that has that time
};

// One build that loses events: all of them, or those of `targets`.
struct GcDroppedBuild
{
  std::string project;
  std::string build;
  std::string host;
  std::string build_dir;
  std::string newest; // its newest event's time
  std::vector<std::string> targets;
};

struct GcPlan
{
  size_t builds_seen = 0;
  std::set<GcUnit> dropped;
  std::vector<LogProblem> problems;           // unreadable lines met in the build index
  std::vector<GcTimeCorrection> corrections;  // builds whose time was taken from their tree's sequence
  std::vector<GcDroppedBuild> dropped_builds; // by project, oldest first

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
  // Input manifests left with no users (removed, never rewritten), and
  // the reverse index files that lost their lines.
  Files manifests;
  Files reverse_indexes;
  size_t events_dropped = 0;
  size_t provenance_removed = 0;     // builds' provenance, once none of their events is left
  std::vector<std::string> failures; // gc went on past each
};

// (done, total) as the build indexes are read, or the artifact logs rewritten.
using GcProgress = std::function<void(size_t, size_t)>;

// Reads the build index and decides what goes; changes nothing.
// "Older than" and "newest" go by each build's time corrected by its tree's
// sequence (GcTimeCorrection); ids of another form (FINGERPRINT_BUILD_ID, a
// CI's run id, `record --build-id`) go by their recorded time alone.
Expected<GcPlan> plan_gc(const Store& store, const GcPolicy& policy, const GcProgress& progress = {});

// Drops the plan's events: from the artifact logs first (a manifest's log
// among them), then the build indexes, so that an interrupted gc leaves
// indexes that still name every log it had not cleaned yet, and a second
// run finishes; last, the input manifests left with no users, each under
// its log's exclusive lock, its reverse index lines before the manifest
// itself (a manifest the store has is indexed whole). With `dry_run`,
// only counts.
GcResult apply_gc(const Store& store, const GcPlan& plan, bool dry_run, const GcProgress& progress = {});

} // namespace fingerprint::store
