#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/hook/link_inputs.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/util/process.hpp>

#include <algorithm>
#include <filesystem>
#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "the project; required"},
  {"version", OptionKind::value, "V", "the project's version"},
  {"target", OptionKind::value, "T", "the target whose link rule this is; required"},
  {"output", OptionKind::value, "FILE", "the file the rule produces; required"},
  {"type", OptionKind::value, "TYPE", "EXECUTABLE, STATIC_LIBRARY, SHARED_LIBRARY or MODULE_LIBRARY"},
  {"build-dir", OptionKind::value, "D", "the build tree (its build ids are counted there); required"},
  {"record-after", OptionKind::value, "TOOL", "record only after the command run by TOOL (ranlib for archives)"},
  {"depfile-driver", OptionKind::values, "CC", "compiler drivers that accept -Wl,--dependency-file="},
  {"args-dir", OptionKind::value, "DIR", "per-target settings written by the CMake module at generate time"},
  {"required", OptionKind::flag, {}, "fail the build step when recording fails (else warn)"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
};

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  std::vector<std::string> command = args.positional();
  const auto project = args.value("project");
  const auto target = args.value("target");
  const auto output = args.value("output");
  const auto build_dir = args.value("build-dir");
  if (command.empty() || !project || !target || !output || !build_dir) {
    print_error(context, "launch: --project, --target, --output, --build-dir and -- COMMAND... are required");
    return k_exit_usage;
  }
  auto algorithm = algorithm_option(args);
  if (!algorithm) {
    print_error(context, "launch: " + algorithm.error().message);
    return k_exit_usage;
  }
  const std::string type = args.value("type").value_or("EXECUTABLE");
  const auto record_after = args.value("record-after");
  // An archive is made by several commands (rm, ar, ranlib); only the
  // last one leaves the final bytes.
  // The tool may sit behind another launcher (CTest's, a linker launcher):
  // it is looked for anywhere in the command, not only in front.
  auto runs = [&](const std::string& tool) {
    return std::any_of(command.begin(), command.end(), [&](const std::string& argument) {
      return argument == tool || (!argument.starts_with("-") && base_name(argument) == base_name(tool));
    });
  };
  const bool final_step = !record_after || runs(*record_after);
  const bool links = type == "EXECUTABLE" || type == "SHARED_LIBRARY" || type == "MODULE_LIBRARY";

  // gold is the one common linker without --dependency-file: a link that
  // asks for it gets the link line's inputs instead.
  const bool gold = std::any_of(command.begin(), command.end(), [](const std::string& argument) {
    return argument == "-fuse-ld=gold" || argument == "-Wl,-fuse-ld=gold";
  });
  std::string depfile;
  if (final_step && links && !gold) {
    for (const auto& driver : args.values("depfile-driver")) {
      if (runs(driver)) {
        depfile = hook::depfile_path(*build_dir, *target);
        command.push_back("-Wl,--dependency-file=" + depfile);
        break;
      }
    }
  }

  auto status = util::run_program(command);
  if (!status) {
    print_error(context, status.error().message);
    return 127;
  }
  if (*status != 0 || !final_step) {
    if (!depfile.empty()) {
      ::unlink(depfile.c_str());
    }
    return *status;
  }

  const std::string absolute_output = absolute_path(*output);
  const std::string absolute_build_dir = absolute_path(*build_dir);
  auto inputs = hook::collect_link_inputs(command, depfile, absolute_output, absolute_build_dir, links);
  if (!depfile.empty()) {
    ::unlink(depfile.c_str());
  }
  hook::TargetSettings settings;
  if (auto dir = args.value("args-dir")) {
    auto loaded = hook::load_target_settings(*dir, *target, absolute_output);
    if (!loaded) {
      print_error(context, loaded.error().message);
      return args.flag("required") ? k_exit_failure : k_exit_ok;
    }
    settings = std::move(*loaded);
  }

  hook::RecordRequest request;
  request.project = *project;
  request.version = args.value("version").value_or("");
  request.target = *target;
  request.build_dir = absolute_build_dir;
  request.algorithm = *algorithm;
  request.produced = {absolute_output};
  for (const auto& path : settings.produces) {
    request.produced.push_back(absolute_path(path));
  }
  request.consumed = std::move(inputs);
  for (const auto& path : settings.consumes) {
    request.consumed.push_back(absolute_path(path));
  }
  auto outcome = [&]() -> Expected<size_t> {
    auto root = store_path(args);
    if (!root) {
      return root.error();
    }
    request.store_root = *root;
    request.build_id = hook::build_id_from_environment();
    if (request.build_id.empty()) {
      auto counted = hook::build_id_from_invocation(absolute_build_dir);
      if (!counted) {
        return counted.error();
      }
      request.build_id = *counted;
    }
    return hook::record(
      request,
      [&](const Error& error) { print_error(context, error.message); },
      [&](const std::string& warning) { print_warning(context, warning); });
  }();
  if (!outcome) {
    if (args.flag("required")) {
      print_error(context, *target + ": " + outcome.error().message + " (FINGERPRINT_REQUIRED is ON)");
      return k_exit_failure;
    }
    print_warning(context,
                  *target + ": not fingerprinted: " + outcome.error().message
                    + " (FINGERPRINT_REQUIRED is OFF, the build goes on)");
  }
  return k_exit_ok;
}

} // namespace

extern const Command k_launch_command{
  "launch",
  "--project P --target T --output FILE --build-dir D [--type TYPE] [options] -- COMMAND...",
  "run a link rule's command and record what it produced and consumed (the CMake module's hook)",
  k_options,
  run};

} // namespace fingerprint::cmd
