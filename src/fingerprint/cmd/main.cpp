#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/manual.hpp>
#include <fingerprint/util/text.hpp>

#include <csignal>
#include <exception>
#include <vector>

#ifndef FINGERPRINT_VERSION
#define FINGERPRINT_VERSION "unknown"
#endif

namespace fingerprint::cmd {

namespace {

constexpr const OptionSpec* k_common_options[] = {&k_store_option, &k_utc_option, &k_help_option};

std::span<const Command* const>
table()
{
  static const Command* const k_table[] = {
    &k_digest_command,    &k_record_command, &k_show_command,   &k_consumers_command, &k_why_command,
    &k_history_command,   &k_stale_command,  &k_verify_command, &k_graph_command,     &k_builds_command,
    &k_build_command,     &k_gc_command,     &k_fsck_command,   &k_export_command,    &k_migrate_command,
    &k_sync_command,      &k_check_command,  &k_launch_command, &k_compile_command,   &k_generate_command,
    &k_installed_command, &k_key_command};
  return k_table;
}

const Command*
find_command(std::string_view name)
{
  for (const Command* command : table()) {
    if (command->name == name) {
      return command;
    }
  }
  return nullptr;
}

std::string
overview()
{
  std::string text = "usage: fingerprint [--store DIR|URL] [--utc] <command> [options] [arguments]\n\n"
                     + std::string(k_description) + "\ncommands:\n";
  for (const Command* command : table()) {
    std::string name(command->name);
    name.resize(12, ' ');
    text += "  " + name + std::string(command->summary) + "\n";
  }
  text += "  help        show this list, or one command's options: fingerprint help <command>\n";
  text += "\n" + std::string(k_exit_status_text);
  return text;
}

std::string
command_help(const Command& command)
{
  std::string text = "usage: fingerprint " + std::string(command.name) + " " + std::string(command.synopsis) + "\n\n"
                     + std::string(command.summary) + "\n\noptions:\n";
  auto add = [&](const OptionSpec& spec) {
    std::string left = "--" + std::string(spec.name);
    if (!spec.placeholder.empty()) {
      left += " " + std::string(spec.placeholder);
      if (spec.kind == OptionKind::values) {
        left += "...";
      }
    }
    left.resize(std::max<size_t>(left.size() + 2, 24), ' ');
    text += "  " + left + std::string(spec.help) + "\n";
  };
  for (const OptionSpec& spec : command.options) {
    add(spec);
  }
  for (const OptionSpec* spec : k_common_options) {
    add(*spec);
  }
  return text;
}

int
usage_error(Context& context, std::string_view message, std::string_view command = {})
{
  print_error(context, message);
  std::string hint = "Try 'fingerprint help";
  if (!command.empty()) {
    hint += " " + std::string(command);
  }
  hint += "'.\n";
  std::fputs(hint.c_str(), context.err);
  return k_exit_usage;
}

int
unknown_command(Context& context, std::string_view name)
{
  std::string message = "'" + std::string(name) + "' is not a fingerprint command";
  std::string_view best;
  size_t best_distance = 3;
  for (const Command* command : table()) {
    const size_t distance = util::edit_distance(name, command->name);
    if (distance < best_distance) {
      best = command->name;
      best_distance = distance;
    }
  }
  if (!best.empty()) {
    message += "; did you mean '" + std::string(best) + "'?";
  }
  return usage_error(context, message);
}

constexpr std::string_view k_help_help =
  "usage: fingerprint help [COMMAND] | help --format man|bash-completion\n"
  "\n"
  "the list of commands, or COMMAND's usage and options (as fingerprint COMMAND --help, or -h);\n"
  "--format man prints the manual page, bash-completion the shell completion (both made from\n"
  "the command table, as the build installs them)\n";

int
help(const std::vector<std::string>& rest, Context& context)
{
  if (rest.empty()) {
    write_out(context, overview());
    return k_exit_ok;
  }
  if (rest.front() == "help" || rest.front() == "--help" || rest.front() == "-h") {
    write_out(context, k_help_help);
    return k_exit_ok;
  }
  if (rest.front() == "--format" || rest.front().starts_with("--format=")) {
    const std::string format = rest.front() == "--format" ? (rest.size() > 1 ? rest[1] : "") : rest.front().substr(9);
    if (format == "man") {
      write_out(context, man_page(table(), FINGERPRINT_VERSION));
      return k_exit_ok;
    }
    if (format == "bash-completion") {
      write_out(context, bash_completion(table()));
      return k_exit_ok;
    }
    return usage_error(context, "help: --format man or --format bash-completion", "help");
  }
  const Command* command = find_command(rest.front());
  if (command == nullptr) {
    return unknown_command(context, rest.front());
  }
  write_out(context, command_help(*command));
  return k_exit_ok;
}

// -h asks for help as --help does, wherever it comes before "--" (after
// it, it is the wrapped command's).
bool
asks_for_help(const std::vector<std::string>& arguments)
{
  for (const std::string& argument : arguments) {
    if (argument == "--") {
      return false;
    }
    if (argument == "-h") {
      return true;
    }
  }
  return false;
}

// Checks the arguments' count and --algorithm, opens the store and loads
// the artifact as the command's table entry asks, then runs it.
int
set_up_and_run(const Command& command, const Args& args, Context& context)
{
  Prepared prepared;
  const std::string name(command.name);
  const size_t count = args.positional().size();
  if (count < command.arity.min || count > command.arity.max) {
    print_error(context, name + ": " + std::string(command.arity.usage));
    return k_exit_usage;
  }
  if (command.validate != nullptr) {
    if (const int status = command.validate(args, context); status != k_exit_ok) {
      return status;
    }
  }
  start_command(args);
  if (command.needs == Needs::nothing) {
    return command.run(args, context, prepared);
  }
  if (auto algorithm = algorithm_option(args)) {
    prepared.algorithm = *algorithm;
  } else {
    print_error(context, name + ": " + algorithm.error().message);
    return k_exit_usage;
  }
  auto root = store_path(args);
  if (!root) {
    print_error(context, root.error().message);
    return k_exit_usage;
  }
  const store::Access access = command.access != nullptr ? command.access(args) : store::Access::read;
  auto opened = store::open_store(*root, access);
  if (!opened) {
    print_error(context, opened.error().message);
    return k_exit_failure;
  }
  // Only writers create a store: a query of one that is not there would
  // answer "nothing recorded" about the wrong place.
  if (access != store::Access::write && !(*opened)->exists()) {
    print_error(context,
                (*opened)->location() + ": no fingerprint store there (" + store_origin(args)
                  + "); nothing was ever recorded into it (builds with the CMake module and `fingerprint record` "
                    "create it)");
    return k_exit_failure;
  }
  prepared.store = std::move(*opened);
  // A query about a project the store does not have is "not recorded",
  // alike for every command that takes --project.
  if (const auto project = args.value("project");
      access == store::Access::read && project && !known_project(*prepared.store, *project, context)) {
    return k_exit_failure;
  }
  if (command.needs == Needs::artifact) {
    const std::string& argument = args.positional().front();
    int failure = k_exit_failure;
    auto record =
      load_artifact(*prepared.store, argument, prepared.algorithm, context, failure, &prepared.matched_by_build_id);
    if (!record) {
      return failure;
    }
    if (!record->recorded()) {
      report_problems(context, prepared.store->location(), record->problems);
      print_error(context,
                  argument + ": not recorded (" + record->key.str() + ") in the store " + prepared.store->location());
      return k_exit_failure;
    }
    prepared.artifact = std::move(*record);
  }
  return command.run(args, context, prepared);
}

int
run(std::vector<std::string> arguments, Context& context)
{
  // Options before the command: --store, --utc, --help, --version.
  std::vector<std::string> global;
  size_t i = 0;
  for (; i < arguments.size() && arguments[i].starts_with("-"); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "--version" || argument == "-V") {
      write_out(context, "fingerprint " FINGERPRINT_VERSION "\n");
      return k_exit_ok;
    }
    if (argument == "--help" || argument == "-h") {
      write_out(context, overview());
      return k_exit_ok;
    }
    if (argument == "--store" && i + 1 < arguments.size()) {
      global.push_back(argument);
      global.push_back(arguments[++i]);
    } else if (argument.starts_with("--store=") || argument == "--utc") {
      global.push_back(argument);
    } else {
      return usage_error(context, "unknown option '" + argument + "' before the command");
    }
  }
  if (i == arguments.size()) {
    std::fputs(overview().c_str(), context.err);
    return k_exit_usage;
  }
  const std::string name = arguments[i];
  std::vector<std::string> rest(arguments.begin() + static_cast<ptrdiff_t>(i) + 1, arguments.end());
  if (name == "help") {
    return help(rest, context);
  }
  const Command* command = find_command(name);
  if (command == nullptr) {
    return unknown_command(context, name);
  }
  if (asks_for_help(rest)) {
    write_out(context, command_help(*command));
    return k_exit_ok;
  }
  rest.insert(rest.begin(), global.begin(), global.end());
  std::vector<OptionSpec> specs(command->options.begin(), command->options.end());
  for (const OptionSpec* spec : k_common_options) {
    specs.push_back(*spec);
  }
  auto args = Args::parse(rest, specs);
  if (!args) {
    return usage_error(context, std::string(command->name) + ": " + args.error().message, command->name);
  }
  if (args->flag("help")) {
    write_out(context, command_help(*command));
    return k_exit_ok;
  }
  use_utc(args->flag("utc"));
  return set_up_and_run(*command, *args, context);
}

} // namespace

std::span<const Command* const>
all_commands()
{
  return table();
}

int
fingerprint_main(int argc, const char* const* argv)
{
  // A file-size limit must surface as EFBIG from write(), reported like any
  // other write error, not as a signal that kills the hook mid-line.
  std::signal(SIGXFSZ, SIG_IGN);
  Context context;
  std::vector<std::string> arguments(argv + 1, argv + argc);
  try {
    const int status = run(std::move(arguments), context);
    if (std::fflush(context.out) != 0) {
      print_error(context, "cannot write output");
      return k_exit_failure;
    }
    return status;
  } catch (const std::exception& error) {
    print_error(context, std::string("internal error: ") + error.what());
    return k_exit_failure;
  }
}

} // namespace fingerprint::cmd
