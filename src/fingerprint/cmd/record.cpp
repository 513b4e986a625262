#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/hook/recorder.hpp>

#include <set>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "the project (CMake PROJECT_NAME); required"},
  {"target", OptionKind::value, "T", "the target that produced the files; required"},
  {"build-id", OptionKind::value, "B", "the build (default: $FINGERPRINT_BUILD_ID, the CI's run id, or the time)"},
  {"build-dir", OptionKind::value, "D", "the build tree (default: the current directory)"},
  {"version", OptionKind::value, "V", "the project's version"},
  {"produced", OptionKind::values, "FILE", "what the target produced; at least one"},
  {"consumed", OptionKind::values, "FILE", "what its link read (role link)"},
  {"compiled", OptionKind::values, "FILE", "what its compiles read: sources and headers (role compile)"},
  {"interface", OptionKind::values, "FILE", "what a static library hands to its consumers (role interface)"},
  {"declared", OptionKind::values, "FILE", "what else it read, as declared (role declared)"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
  {"required", OptionKind::flag, {}, "fail when a database is out of reach (else spool the events and warn)"},
};

// Paths once each, first occurrence first.
std::vector<std::string>
unique_absolute(const std::vector<std::string>& paths, const std::set<std::string>& exclude)
{
  std::vector<std::string> result;
  std::set<std::string> seen = exclude;
  for (const auto& path : paths) {
    auto absolute = absolute_path(path);
    if (seen.insert(absolute).second) {
      result.push_back(std::move(absolute));
    }
  }
  return result;
}

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  const auto project = args.value("project");
  const auto target = args.value("target");
  if (!project || project->empty() || !target || target->empty()) {
    print_error(context, "record: --project and --target are required");
    return k_exit_usage;
  }
  if (args.values("produced").empty()) {
    print_error(context, "record: --produced needs at least one FILE");
    return k_exit_usage;
  }
  if (!args.positional().empty()) {
    print_error(context,
                "record: unexpected argument '" + args.positional().front()
                  + "' (files go after --produced or --consumed)");
    return k_exit_usage;
  }
  auto algorithm = algorithm_option(args);
  if (!algorithm) {
    print_error(context, "record: " + algorithm.error().message);
    return k_exit_usage;
  }
  auto root = store_path(args);
  if (!root) {
    print_error(context, root.error().message);
    return k_exit_usage;
  }

  const auto produced = unique_absolute(args.values("produced"), {});
  const std::set<std::string> outputs(produced.begin(), produced.end());
  std::vector<hook::Input> consumed;
  for (const auto& [option, role] : {std::pair{"consumed", store::Role::link},
                                     std::pair{"compiled", store::Role::compile},
                                     std::pair{"interface", store::Role::interface},
                                     std::pair{"declared", store::Role::declared}}) {
    for (auto& path : unique_absolute(args.values(option), outputs)) {
      consumed.push_back({std::move(path), role});
    }
  }
  hook::RecordRequest request;
  request.store_root = *root;
  request.project = *project;
  request.version = args.value("version").value_or("");
  request.target = *target;
  request.build_id = args.value("build-id").value_or(hook::build_id_from_environment());
  if (request.build_id.empty()) {
    request.build_id = hook::build_id_from_time();
  }
  request.build_dir = absolute_path(args.value("build-dir").value_or("."));
  request.produced = produced;
  request.consumed = consumed;
  request.algorithm = *algorithm;
  request.spool = !args.flag("required");
  auto recorded = hook::record(
    request,
    [&](const Error& error) { print_error(context, error.message); },
    [&](const std::string& warning) { print_warning(context, warning); });
  if (!recorded) {
    print_error(context, "record: " + recorded.error().message);
    return k_exit_failure;
  }
  return k_exit_ok;
}

} // namespace

extern const Command k_record_command{
  .name = "record",
  .synopsis = "--project P --target T [--build-id B] [--build-dir D] [--version V] --produced FILE... "
              "[--consumed|--compiled|--interface|--declared FILE...]",
  .summary = "record what a build step produced and consumed (run by the build hooks)",
  .options = k_options,
  .run = run};

} // namespace fingerprint::cmd
