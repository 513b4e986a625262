#pragma once

#include <fingerprint/util/expected.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

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
// trees of one project never share an id. The first answer is kept for the
// rest of the process: a process belongs to one invocation.
//
// A process whose build tool was killed (kill -9 of ninja or of the top
// make) is an orphan, reparented to init or a subreaper, and finds no build
// tool above it. It joins the invocation it came from when it is a child
// of one whose process is gone (see step_sequence) rather than advancing
// the counter for itself.
Expected<std::string> build_id_from_invocation(const std::string& build_dir);

// The process the build tool is looked for from: this one (0, the
// default), or the one a recorder serves (fingerprint-launch, which runs
// the link as a child of the build tool's shell).
void set_hook_process(long pid);
// That process's id: names what is the hook's own (its linker's dependency file).
long hook_process();

// What build_id_from_invocation found and keeps for the rest of the
// process, as a value: a recorder serving several hooks in one process
// keeps each hook's and puts it back whenever it acts for that hook.
struct ClaimedBuild
{
  bool set = false;
  std::string build_dir;
  std::string build_id;
  std::string identity;
  bool tool = false; // identity is a live ninja's or make's run (SequenceStep::tool)
};
ClaimedBuild claimed_build();
void set_claimed_build(const ClaimedBuild& claimed);

// Takes this process's build id now, while the build tool that runs it is
// alive: `launch` calls it before the link, because a build tool killed
// during a link leaves the link running as an orphan that no longer finds
// it. build_id_from_invocation then returns the same id. Nothing happens
// when the id comes from the environment; an error is left for
// build_id_from_invocation to report.
void claim_build_id(const std::string& build_dir);

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
// ("<pid>:<start time>"), or the one build_id_from_invocation found it
// belongs to; exposed for tests.
std::string invocation_identity();

// The identity of the ninja's or make's run above this process (the
// claimed one, or found now); empty when there is none: a hook run by a
// script, or an orphan of a killed run. What a run may keep for its links
// (digest::BuildMemo) is keyed by it.
std::string build_tool_run();

// One process of the chain from a hook up to init, from /proc/<pid>/stat.
struct ProcessFacts
{
  long pid = 0;
  std::string name;
  long parent = 0;
  long session = 0;
  unsigned long long start = 0; // clock ticks since boot
};

struct SequenceStep
{
  std::string build_id;
  std::string identity; // of the invocation the process belongs to
  std::string text;     // the sequence file's new contents; empty: unchanged
  // The identity is the run of a ninja or make above the process, not its
  // parent's (no build tool found) nor a killed run an orphan joined.
  bool tool = false;
  // The invocation's `seen` as the file now has it (with `tool`): a hook
  // that started no later than seen + k_seen_slack would leave the file as
  // it is.
  unsigned long long seen = 0;
};

// build_id_from_invocation's decision, without /proc and the file; exposed
// for tests. `text` is the sequence file, `chain` the hook's process and
// its ancestors (nearest first, as far as they could be read), `boot` the
// kernel's boot id, `alive(pid, start)` whether that process still runs,
// `new_tag()` a tag for a tree that has none (called only then: it draws a
// random number). `text` is left as it is (an empty SequenceStep::text)
// unless the number advances, the tree gets a tag, the file comes from an
// older runner or another boot, or the run's last live hook moved by more
// than a second: most hooks of a run change nothing.
SequenceStep step_sequence(std::string_view text,
                           const std::vector<ProcessFacts>& chain,
                           const std::string& boot,
                           const std::function<bool(long, unsigned long long)>& alive,
                           const std::function<std::string()>& new_tag);

} // namespace fingerprint::hook
