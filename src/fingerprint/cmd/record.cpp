#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/util/text.hpp>

#include <climits>
#include <cstdlib>
#include <set>
#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "the project (CMake PROJECT_NAME); required"},
  {"target", OptionKind::value, "T", "the target that produced the files; required"},
  {"build-id", OptionKind::value, "B", "the build (default: $FINGERPRINT_BUILD_ID, the CI's run id, or the time)"},
  {"build-dir", OptionKind::value, "D", "the build tree (default: the current directory)"},
  {"version", OptionKind::value, "V", "the project's version"},
  {"produced", OptionKind::values, "FILE", "what the target produced; at least one"},
  {"consumed", OptionKind::values, "FILE", "what the target read to produce it"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
};

// $FINGERPRINT_BUILD_ID, else the CI system's own run id, else a new id
// from the time and the process (DESIGN.md section 7; the CMake module
// passes --build-id itself).
std::string
default_build_id()
{
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (auto id = env("FINGERPRINT_BUILD_ID"); !id.empty()) {
    return id;
  }
  if (auto id = env("GITHUB_RUN_ID"); !id.empty()) {
    const auto attempt = env("GITHUB_RUN_ATTEMPT");
    return "github-" + id + (attempt.empty() ? "" : "." + attempt);
  }
  if (auto id = env("CI_PIPELINE_ID"); !id.empty()) {
    return "gitlab-" + id;
  }
  if (auto id = env("BUILD_TAG"); !id.empty()) {
    return id; // Jenkins: jenkins-<job>-<number>
  }
  if (auto id = env("BUILDKITE_BUILD_ID"); !id.empty()) {
    return "buildkite-" + id;
  }
  const int64_t now = util::now_ns();
  std::string stamp = util::format_rfc3339(now);
  std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
  return stamp + "-" + std::to_string(::getpid());
}

std::string
host_name()
{
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return "unknown";
  }
  return name;
}

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
run(const Args& args, Context& context)
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
  const auto consumed =
    unique_absolute(args.values("consumed"), std::set<std::string>(produced.begin(), produced.end()));
  std::vector<std::string> all = produced;
  all.insert(all.end(), consumed.begin(), consumed.end());

  // Every file is digested before the store is touched: one bad file means
  // nothing is recorded, not half of the build step.
  const digest::DigestCache cache(digest::DigestCache::default_directory());
  digest::DigestOptions options;
  options.algorithm = *algorithm;
  options.cache = &cache;
  auto digests = digest::digest_files(all, options);
  bool failed = false;
  for (const auto& result : digests) {
    if (!result) {
      print_error(context, result.error().message);
      failed = true;
    }
  }
  if (failed) {
    print_error(context, "record: nothing recorded");
    return k_exit_failure;
  }

  store::Event common;
  common.project = *project;
  common.version = args.value("version").value_or("");
  common.target = *target;
  common.build = args.value("build-id").value_or(default_build_id());
  common.build_dir = absolute_path(args.value("build-dir").value_or("."));
  common.host = host_name();
  common.time = util::format_rfc3339(util::now_ns());
  const std::string prefix = std::string(digest::algorithm_name(*algorithm)) + ":";

  std::vector<store::Event> events;
  for (size_t p = 0; p < produced.size(); ++p) {
    store::Event event = common;
    event.event = store::EventKind::produced;
    event.digest = prefix + digests[p]->hex;
    event.size = digests[p]->size;
    event.path = produced[p];
    events.push_back(std::move(event));
  }
  for (size_t c = 0; c < consumed.size(); ++c) {
    const auto& file = *digests[produced.size() + c];
    for (size_t p = 0; p < produced.size(); ++p) {
      store::Event event = common;
      event.event = store::EventKind::consumed;
      event.digest = prefix + file.hex;
      event.size = file.size;
      event.path = consumed[c];
      event.product = prefix + digests[p]->hex;
      events.push_back(std::move(event));
    }
  }

  auto store = store::DirectoryStore::open_for_writing(*root);
  if (!store) {
    print_error(context, store.error().message);
    return k_exit_failure;
  }
  if (auto ok = store->append(events); !ok) {
    print_error(context, ok.error().message);
    return k_exit_failure;
  }
  return k_exit_ok;
}

} // namespace

const Command&
record_command()
{
  static const Command k_command{
    "record",
    "--project P --target T [--build-id B] [--build-dir D] [--version V] --produced FILE... [--consumed FILE...]",
    "record what a build step produced and consumed (run by the build hooks)",
    k_options,
    run};
  return k_command;
}

} // namespace fingerprint::cmd
