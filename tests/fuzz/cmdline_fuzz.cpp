// The runner's command line: the input is argv[1..], each argument ended by
// a NUL byte (as in /proc/<pid>/cmdline), since real arguments cannot hold
// one. Every line goes through the real parser with the real option table
// of the command it names. Lines that end in an answer or a usage error go
// through fingerprint_main itself, which must then exit as documented (0 or
// 2); lines that would run a command stop after parsing, because running
// one digests files, writes a store or (launch) starts a program.

#include <fingerprint/cmd/args.hpp>
#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace fingerprint::cmd;

enum class Outcome
{
  answered,    // help or version: exit 0
  usage_error, // exit 2
  runs_command,
};

const Command*
find_command(std::string_view name)
{
  for (const Command* command : all_commands()) {
    if (command->name == name) {
      return command;
    }
  }
  return nullptr;
}

// What a successful parse promises the commands: an option of each kind
// holds what its kind says, and no argument is handed out twice.
void
check_parsed(const Args& args, const std::vector<std::string>& arguments, const std::vector<OptionSpec>& specs)
{
  size_t handed_out = args.positional().size();
  for (const OptionSpec& spec : specs) {
    const auto& values = args.values(spec.name);
    handed_out += values.size();
    const bool present = args.flag(spec.name);
    const bool holds = spec.kind == OptionKind::flag    ? values.empty()
                       : spec.kind == OptionKind::value ? present == (values.size() == 1)
                                                        : present == !values.empty();
    if (!holds || args.value(spec.name).has_value() != !values.empty()) {
      __builtin_trap();
    }
  }
  if (handed_out > arguments.size()) {
    __builtin_trap();
  }
}

// fingerprint_main's dispatch (cmd/main.cpp) decided the same way: options
// before the command, then `help`, then the command's own options. Should
// the two drift apart, a line this calls an answer or a usage error exits
// with another status, and the trap below says so.
Outcome
predict(const std::vector<std::string>& arguments)
{
  std::vector<std::string> global_store;
  size_t i = 0;
  for (; i < arguments.size() && arguments[i].starts_with("-"); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "--version" || argument == "-V" || argument == "--help" || argument == "-h") {
      return Outcome::answered;
    }
    if (argument == "--store" && i + 1 < arguments.size()) {
      global_store.push_back(argument);
      global_store.push_back(arguments[++i]);
    } else if (argument.starts_with("--store=") || argument == "--utc") {
      global_store.push_back(argument);
    } else {
      return Outcome::usage_error;
    }
  }
  if (i == arguments.size()) {
    return Outcome::usage_error;
  }
  const std::string& name = arguments[i];
  std::vector<std::string> rest(arguments.begin() + static_cast<ptrdiff_t>(i) + 1, arguments.end());
  if (name == "help") {
    if (rest.empty() || rest.front() == "help" || rest.front() == "--help" || rest.front() == "-h") {
      return Outcome::answered;
    }
    if (rest.front() == "--format" || rest.front().starts_with("--format=")) {
      const std::string format = rest.front() == "--format" ? (rest.size() > 1 ? rest[1] : "") : rest.front().substr(9);
      return format == "man" || format == "bash-completion" ? Outcome::answered : Outcome::usage_error;
    }
    return find_command(rest.front()) != nullptr ? Outcome::answered : Outcome::usage_error;
  }
  const Command* command = find_command(name);
  if (command == nullptr) {
    return Outcome::usage_error;
  }
  // -h before any "--" is help, whatever else the line holds.
  for (const std::string& argument : rest) {
    if (argument == "--") {
      break;
    }
    if (argument == "-h") {
      return Outcome::answered;
    }
  }
  rest.insert(rest.begin(), global_store.begin(), global_store.end());
  std::vector<OptionSpec> specs(command->options.begin(), command->options.end());
  specs.push_back(k_store_option);
  specs.push_back(k_utc_option);
  specs.push_back(k_help_option);
  const auto args = Args::parse(rest, specs);
  if (!args) {
    return Outcome::usage_error;
  }
  check_parsed(*args, rest, specs);
  return args->flag("help") ? Outcome::answered : Outcome::runs_command;
}

} // namespace

extern "C" int
LLVMFuzzerInitialize(int*, char***)
{
  // Belt and braces should a command run after all: no store can be made
  // under a path whose parent is not a directory, not even by root.
  setenv("FINGERPRINT_DIR", "/dev/null/fingerprint-fuzz-store", 1);
  return 0;
}

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  std::vector<std::string> arguments;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (size_t start = 0; start < input.size();) {
    const size_t end = std::min(input.find('\0', start), input.size());
    arguments.emplace_back(input.substr(start, end - start));
    start = end + 1;
  }

  const Outcome outcome = predict(arguments);
  if (outcome == Outcome::runs_command) {
    return 0;
  }
  std::vector<const char*> argv{"fingerprint"};
  for (const std::string& argument : arguments) {
    argv.push_back(argument.c_str());
  }
  const int status = fingerprint_main(static_cast<int>(argv.size()), argv.data());
  if (status != (outcome == Outcome::answered ? k_exit_ok : k_exit_usage)) {
    __builtin_trap();
  }
  return 0;
}
