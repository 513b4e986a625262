#pragma once

#include <fingerprint/util/expected.hpp>

#include <string>

namespace fingerprint::hook {

// $FINGERPRINT_BUILD_ID, else the CI system's own run id (GitHub Actions,
// GitLab, Jenkins, Buildkite); empty when neither is set.
std::string build_id_from_environment();

// A build id from the time and the process: for `record` run by hand.
std::string build_id_from_time();

// The per-build-tree sequence number of the build tool invocation running
// this process (README, "Using it from CMake"): every hook under one `ninja` (or
// `make`) run gets the same number, the next run the next one. The
// invocation is recognised by the build tool's process id and start time,
// found by walking up the process tree; the counter lives in
// <build_dir>/CMakeFiles/fingerprint/build-sequence, under a lock. The id
// is "<number>-<tag>", the tag being random per build tree so that two
// trees of one project never share an id.
Expected<std::string> build_id_from_invocation(const std::string& build_dir);

// What the hooks of one build tool invocation that could not record have
// said, so that the first warns in full and the rest are counted, not
// repeated (README: a hook that cannot record "warns once").
struct Unrecorded
{
  bool first = true;            // no hook of this invocation failed before
  unsigned long long count = 0; // another invocation's count, not yet reported
  std::string build;            // that invocation's build id
};

// Notes a hook's outcome in <build_dir>/CMakeFiles/fingerprint/unrecorded
// ("<invocation> <count> <build id>", under a lock): a failure is counted
// for this invocation, and the first hook of the next invocation, failing or
// not, hears how many of the last one's hooks failed, once. A hook that
// recorded touches nothing unless the file exists.
Expected<Unrecorded> note_unrecorded(const std::string& build_dir, const std::string& build_id, bool failed);

// Identifies the build tool invocation that is an ancestor of this process
// ("<pid>:<start time>"); exposed for tests.
std::string invocation_identity();

} // namespace fingerprint::hook
