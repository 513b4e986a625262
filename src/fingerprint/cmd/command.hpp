#pragma once

#include <fingerprint/cmd/args.hpp>

#include <cstdio>
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

// One subcommand: its name, how it is called, and what runs it. All of them
// live in one table (commands.cpp), which `help` lists.
struct Command
{
  std::string_view name;
  std::string_view synopsis; // arguments after the name
  std::string_view summary;  // one line for `fingerprint help`
  std::span<const OptionSpec> options;
  int (*run)(const Args& args, Context& context);
};

// The table, in the order `help` lists it.
std::span<const Command* const> all_commands();

// The entry point behind runner/main.cpp.
int fingerprint_main(int argc, const char* const* argv);

// Each subcommand, one file each.
const Command& digest_command();
const Command& record_command();
const Command& show_command();
const Command& consumers_command();
const Command& verify_command();
const Command& launch_command();
const Command& installed_command();
const Command& check_command();
const Command& graph_command();
const Command& fsck_command();
const Command& builds_command();
const Command& build_command();
const Command& why_command();
const Command& export_command();
const Command& gc_command();
const Command& migrate_command();

} // namespace fingerprint::cmd
