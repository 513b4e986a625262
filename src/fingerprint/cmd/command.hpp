#pragma once

#include <fingerprint/cmd/args.hpp>
#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/store.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fingerprint::cmd {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_failure = 1; // a failure or a negative answer
inline constexpr int k_exit_usage = 2;

struct Context
{
  std::FILE* out = stdout;
  std::FILE* err = stderr;
};

// What main() sets up before a command runs, once for all of them, as
// ninja's tool table says when each tool runs.
enum class Needs
{
  nothing,  // the command sets up for itself
  store,    // the store, opened (Command::access says how)
  artifact, // the store, and the record of the first argument (FILE|DIGEST),
            // which must be recorded: "not recorded" is answered for it
};

// How many positional arguments a command takes; `usage` is the message
// when the count is wrong ("<name>: <usage>", exit 2).
struct Arity
{
  size_t min = 0;
  size_t max = SIZE_MAX;
  std::string_view usage = {};
};

inline constexpr Arity k_one_artifact{1, 1, "give exactly one FILE or DIGEST"};

// What main() set up for one call of a command.
struct Prepared
{
  // --algorithm, checked (any command that needs a store).
  digest::Algorithm algorithm = digest::k_default_algorithm;
  // Needs::store and Needs::artifact.
  std::unique_ptr<store::Store> store;
  // Needs::artifact. Problems met in its log are in it, for the command to
  // report as it sees fit.
  std::optional<store::ArtifactRecord> artifact;
  // Needs::artifact, when the file's own bytes are not recorded but its GNU
  // build-id is a recorded product's (a stripped or split copy): the build-id
  // and the file's own digest; `artifact` is then that product's record.
  std::optional<std::pair<std::string, std::string>> matched_by_build_id;
};

// One subcommand: its name, how it is called, what it needs and what runs
// it. All of them live in one table (main.cpp), which `help` lists.
struct Command
{
  std::string_view name;
  std::string_view synopsis; // arguments after the name
  std::string_view summary;  // one line for `fingerprint help`
  std::span<const OptionSpec> options;
  int (*run)(const Args& args, Context& context, Prepared& prepared);
  Needs needs = Needs::nothing;
  Arity arity = {};
  // How the store is opened (Needs::store); null: for reading.
  store::Access (*access)(const Args& args) = nullptr;
  // The command's own usage checks, run before the store is opened, so
  // that a usage error says so (exit 2) whatever state the store is in;
  // null: none. Returns the exit status to stop with, or k_exit_ok.
  int (*validate)(const Args& args, Context& context) = nullptr;
};

// The table, in the order `help` lists it.
std::span<const Command* const> all_commands();

// The entry point behind runner/main.cpp.
int fingerprint_main(int argc, const char* const* argv);

// Each subcommand, one file each.
extern const Command k_digest_command;
extern const Command k_key_command;
extern const Command k_record_command;
extern const Command k_show_command;
extern const Command k_consumers_command;
extern const Command k_verify_command;
extern const Command k_launch_command;
extern const Command k_compile_command;
extern const Command k_generate_command;
extern const Command k_installed_command;
extern const Command k_check_command;
extern const Command k_graph_command;
extern const Command k_fsck_command;
extern const Command k_builds_command;
extern const Command k_build_command;
extern const Command k_why_command;
extern const Command k_export_command;
extern const Command k_gc_command;
extern const Command k_migrate_command;
extern const Command k_sync_command;
extern const Command k_stale_command;
extern const Command k_history_command;

} // namespace fingerprint::cmd
