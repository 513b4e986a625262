#pragma once

// What `builds` lists of each build (its counts, times, host and tree),
// and the store's summary of them: `builds.summary` at the root of a
// directory store, one line per build, each stamped with the size, inode
// and times its build index had when it was summarized. A line whose stamp
// still matches its index is used instead of reading the index and every
// input manifest its products name (a build of 10 products: 11 files read
// for one line); the builds appended to since are summarized from their
// files. Queries never write it (reading a store changes nothing in it),
// nor do appends (a hook stays O(1)): gc and fsck --repair, which change a
// store anyway, bring it up to date, replacing it whole (temporary file,
// fsync, rename). A store without it (older, or never gc'ed) is answered
// from the indexes as before. fsck checks it against the indexes.

#include <fingerprint/store/store.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::store {

struct BuildSummary
{
  BuildRef ref;
  std::string build_dir; // of the last event (a manifest's edges last)
  std::string host;
  std::string first_time; // RFC 3339: strings sort by time
  std::string last_time;
  uint64_t produced = 0;  // distinct digests
  uint64_t consumed = 0;  // distinct digests, the manifests' entries and old consumed events
  uint64_t installed = 0; // events

  bool
  operator==(const BuildSummary& other) const
  {
    return ref.project == other.ref.project && ref.build == other.ref.build && build_dir == other.build_dir
           && host == other.host && first_time == other.first_time && last_time == other.last_time
           && produced == other.produced && consumed == other.consumed && installed == other.installed;
  }
};

inline constexpr std::string_view k_build_summary_file = "builds.summary";

// One build summarized from its index's events and the input manifests its
// products name (each manifest read once per call); unreadable or missing
// manifests go to `problems`.
BuildSummary summarize_build(const Store& store,
                             const BuildRef& ref,
                             const std::vector<Event>& events,
                             std::vector<LogProblem>& problems);

struct SummaryLine
{
  BuildSummary summary;
  BuildStamp stamp;
};

// The file's text: "fingerprint-builds-summary 1\n", a line per build
// (every field percent-encoded as layout::encode_component does, separated
// by spaces), then "end <lines> <FNV-1a 64 of everything before, hex>\n".
std::string encode_summaries(const std::vector<SummaryLine>& lines);
// Reads it back; an error says what is wrong (cut short, damaged).
Expected<std::vector<SummaryLine>> parse_summaries(std::string_view text);

// Every build's summary (only `project`'s when not empty), in
// list_builds() order: from the summary file where its stamp matches, else
// from the build's index and manifests. Problems of the builds read go to
// `problems` (a build with a problem is never put in the file, so every
// call reports it). Writes nothing.
Expected<std::vector<BuildSummary>> build_summaries(const Store& store,
                                                    const std::string& project,
                                                    std::vector<LogProblem>& problems);

// Brings the file up to date with every build, replacing it when a line
// changed, appeared or went (gc calls it); false when the store keeps none.
Expected<bool> refresh_build_summaries(const Store& store);

// fsck's part: checks the summary file (when there is one) against the
// build indexes: damaged, or a line whose stamp matches but whose counts
// do not, is a finding; a line left behind by a later append is not (the
// next query refreshes it). With `repair`, after the rest of the repair,
// the file is written anew from every build (a damaged one is first
// copied to the run's quarantine). `relative` names the summary in
// findings: builds.summary, or a database's table.
void check_build_summaries(const Store& store, FsckReport& report, bool repair, const std::string& relative);

} // namespace fingerprint::store
