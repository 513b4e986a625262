#pragma once

// `launch` in two halves around running the link rule's command, so that
// the second, which reads what the linker left, can be driven without a
// process per call (tests/fuzz/launch_fuzz.cpp).

#include <fingerprint/cmd/args.hpp>
#include <fingerprint/cmd/command.hpp>
#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/util/expected.hpp>

#include <string>
#include <vector>

namespace fingerprint::cmd {

struct LaunchPlan
{
  std::vector<std::string> command; // with -Wl,--dependency-file= when a driver takes it
  std::string depfile;              // the linker's dependency file; empty: none asked for
  bool final_step = true;           // the command that leaves the final bytes (--record-after)
  bool links = true;                // an executable or a shared or module library
  digest::Algorithm algorithm = digest::k_default_algorithm;
};

// The command to run and what to read after it, from launch's options; an
// error is a usage error.
Expected<LaunchPlan> plan_launch(const Args& args);

// After the final step's command exited 0: records the output and the
// linker's inputs, and removes the dependency file. Returns the exit status
// of the build step: with --required 1 when recording failed, else 0
// whatever happened, every failure a warning; of the warnings that say a
// target was not recorded, only the build invocation's first is printed.
int record_launch(const Args& args, const LaunchPlan& plan, Context& context);

} // namespace fingerprint::cmd
