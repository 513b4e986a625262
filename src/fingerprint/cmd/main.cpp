#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/util/text.hpp>

#include <csignal>
#include <exception>
#include <vector>

#ifndef FINGERPRINT_VERSION
#define FINGERPRINT_VERSION "unknown"
#endif

namespace fingerprint::cmd {

namespace {

constexpr std::string_view k_overview = "usage: fingerprint [--store DIR|URL] <command> [options] [arguments]\n"
                                        "\n"
                                        "Records which build produced each artifact and which builds consumed it,\n"
                                        "in a store shared by every project: --store DIR, else $FINGERPRINT_DIR,\n"
                                        "else ${XDG_DATA_HOME:-$HOME/.local/share}/fingerprint. A store may also\n"
                                        "be a PostgreSQL database: --store postgresql://user@host:port/db.\n"
                                        "\n"
                                        "commands:\n";

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
  std::string text(k_overview);
  for (const Command* command : table()) {
    std::string name(command->name);
    name.resize(12, ' ');
    text += "  " + name + std::string(command->summary) + "\n";
  }
  text += "  help        show this list, or one command's options: fingerprint help <command>\n";
  text += "\nexit status: 0 success, 1 failure or a negative answer, 2 usage error\n";
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
  add(k_store_option);
  add(k_help_option);
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
  use_trusted_keys(args);
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
  // Options before the command: --store, --help, --version.
  std::vector<std::string> global_store;
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
      global_store = {argument, arguments[++i]};
    } else if (argument.starts_with("--store=")) {
      global_store = {argument};
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
    if (rest.empty()) {
      write_out(context, overview());
      return k_exit_ok;
    }
    const Command* command = find_command(rest.front());
    if (command == nullptr) {
      return unknown_command(context, rest.front());
    }
    write_out(context, command_help(*command));
    return k_exit_ok;
  }
  const Command* command = find_command(name);
  if (command == nullptr) {
    return unknown_command(context, name);
  }
  rest.insert(rest.begin(), global_store.begin(), global_store.end());
  std::vector<OptionSpec> specs(command->options.begin(), command->options.end());
  specs.push_back(k_store_option);
  specs.push_back(k_help_option);
  auto args = Args::parse(rest, specs);
  if (!args) {
    return usage_error(context, std::string(command->name) + ": " + args.error().message, command->name);
  }
  if (args->flag("help")) {
    write_out(context, command_help(*command));
    return k_exit_ok;
  }
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
