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

// How `launch` runs the link rule's command: as this process's child and in
// its place (the default), or through fingerprint-launch, whose recorder
// serves the hook from a warm process (runner/recorder.cpp) and has the
// launcher run the command.
class LaunchExecutor
{
public:
  virtual ~LaunchExecutor() = default;
  // Replaces the hook with `argv`, or hands `argv` to the launcher that
  // runs it in the hook's place (true): nothing is recorded after it.
  // False when that failed, with errno set.
  virtual bool exec(const std::vector<std::string>& argv) = 0;
  // Runs `argv` and returns its exit status as a shell gives it.
  virtual Expected<int> run(const std::vector<std::string>& argv) = 0;
};

// The executor `launch` uses from now on; null: the default.
void set_launch_executor(LaunchExecutor* executor);

// What fingerprint-launch sets on the runner it runs when no recorder
// answered: the name to start one under (runner/recorder_protocol.hpp
// spells the same name for the launcher, which has no C++ library).
inline constexpr char k_recorder_start_variable[] = "FINGERPRINT_RECORDER_START";

// Starts a recorder under `name` (fingerprint-launch's, see
// runner/recorder_protocol.hpp) as a daemon: this runner's binary, in a
// session of its own, its standard streams /dev/null and no other
// descriptor kept, so that no build tool waits for it. Waits only for the
// intermediate process.
void start_recorder(const std::string& name);

// Starts `program` with the arguments `argv0 flag name` as start_recorder
// starts the recorder (fingerprint-postgresql's query server is started
// so by the runner: runner/query_client.hpp).
void start_resident(const std::string& program, const char* argv0, const char* flag, const std::string& name);

// Adds glibc.malloc.tcache_count=1024 to $GLIBC_TUNABLES unless it sets a
// count already: for a resident process, set before its exec.
void set_resident_tunables();

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
