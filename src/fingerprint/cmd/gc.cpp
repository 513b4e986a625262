// gc: the command line of retention (store/gc.hpp decides and drops).

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/store/build_summary.hpp>
#include <fingerprint/store/gc.hpp>
#include <fingerprint/util/text.hpp>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"dry-run", OptionKind::flag, {}, "say what would go, change nothing"},
  {"missing-build-dirs", OptionKind::flag, {}, "drop builds on this host whose build tree no longer exists"},
  {"older-than", OptionKind::value, "AGE", "drop builds older than AGE: 90d, 12h, 30m, 2w, 3600s"},
  {"keep-builds",
   OptionKind::value,
   "N",
   "keep only the N newest builds of each project and target in each build tree (by sequence within it)"},
  {"json", OptionKind::flag, {}, "print the summary as JSON"},
};

// "90d" -> nanoseconds; -1 when not a duration.
int64_t
parse_age(std::string_view text)
{
  if (text.size() < 2) {
    return -1;
  }
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    default:
      return -1;
  }
  int64_t count = 0;
  for (const char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9' || count > 1'000'000'000) {
      return -1;
    }
    count = count * 10 + (c - '0');
  }
  return count * unit * 1'000'000'000;
}

// What goes, from the command line; prints why and returns nothing when
// it says nothing sensible.
std::optional<store::GcPolicy>
parse_policy(const Args& args, Context& context)
{
  store::GcPolicy policy;
  policy.missing_build_dirs = args.flag("missing-build-dirs");
  if (auto age = args.value("older-than")) {
    policy.max_age_ns = parse_age(*age);
    if (policy.max_age_ns < 0) {
      print_error(context, "gc: --older-than: '" + *age + "' is not an age such as 90d, 12h, 30m, 2w or 3600s");
      return std::nullopt;
    }
  }
  if (auto text = args.value("keep-builds")) {
    char* end = nullptr;
    policy.keep_builds = std::strtol(text->c_str(), &end, 10);
    if (text->empty() || *end != '\0' || policy.keep_builds < 1) {
      print_error(context, "gc: --keep-builds: '" + *text + "' is not a number of builds (1 or more)");
      return std::nullopt;
    }
  }
  if (!policy.missing_build_dirs && policy.max_age_ns < 0 && policy.keep_builds < 0) {
    print_error(context, "gc: say what goes: --missing-build-dirs, --older-than AGE and/or --keep-builds N");
    return std::nullopt;
  }
  return policy;
}

int
validate(const Args& args, Context& context)
{
  return parse_policy(args, context) ? k_exit_ok : k_exit_usage;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const bool dry_run = args.flag("dry-run");
  auto policy = parse_policy(args, context);
  if (!policy) {
    return k_exit_usage;
  }
  policy->host = hook::host_name();
  policy->now_ns = util::now_ns();
  Expected<store::GcPlan> plan = Error{};
  {
    Progress progress(context.err, "gc", "build indexes read");
    plan = store::plan_gc(*prepared.store, *policy, [&](size_t done, size_t total) { progress(done, total); });
  }
  if (!plan) {
    print_error(context, plan.error().message);
    return k_exit_failure;
  }
  report_problems(context, prepared.store->location(), plan->problems);
  // A clock that was ahead: said, since it changes what goes.
  constexpr size_t k_shown = 10;
  for (size_t i = 0; i < plan->corrections.size() && i < k_shown; ++i) {
    const auto& fix = plan->corrections[i];
    print_warning(context,
                  "gc: build " + fix.build + " of " + fix.project + " is recorded at " + fix.recorded
                    + ", after the later build " + fix.later_build + " of its build tree: taken as of " + fix.taken
                    + " (a clock was ahead)");
  }
  if (plan->corrections.size() > k_shown) {
    print_warning(context,
                  "gc: " + std::to_string(plan->corrections.size() - k_shown)
                    + " more builds recorded after later builds of their tree: taken as of those");
  }
  store::GcResult result;
  {
    Progress progress(context.err, "gc", dry_run ? "artifact logs looked at" : "artifact logs rewritten");
    result =
      store::apply_gc(*prepared.store, *plan, dry_run, [&](size_t done, size_t total) { progress(done, total); });
  }
  for (const auto& failure : result.failures) {
    print_error(context, "gc: " + failure);
  }
  // Last, the build index's summary (store/build_summary.hpp) brought up to
  // date: with the indexes gc rewrote, and with every build since the last
  // gc, so that `builds` reads only what is appended from now on. Not
  // after a failure: what stopped gc (a store this user may only read, a
  // full disk) would stop the summary too, and say so once more.
  if (!dry_run && result.failures.empty()) {
    if (auto refreshed = store::refresh_build_summaries(*prepared.store); !refreshed) {
      print_warning(context, "gc: the builds summary is not brought up to date: " + refreshed.error().message);
    }
    // And the index pack (store/index_pack.hpp), which graph, stale and
    // history read instead of every index and manifest.
    if (auto packed = prepared.store->refresh_index_pack(); !packed) {
      print_warning(context, "gc: the index pack is not written anew: " + packed.error().message);
    }
  }

  const size_t builds_dropped = plan->builds_dropped();
  if (args.flag("json")) {
    nlohmann::ordered_json out;
    out["dry_run"] = dry_run;
    out["builds_seen"] = plan->builds_seen;
    out["builds_dropped"] = builds_dropped;
    out["targets_dropped"] = plan->dropped.size();
    out["events_dropped"] = result.events_dropped;
    out["artifact_logs_rewritten"] = result.logs.rewritten;
    out["artifact_logs_removed"] = result.logs.removed;
    out["build_indexes_rewritten"] = result.indexes.rewritten;
    out["build_indexes_removed"] = result.indexes.removed;
    out["manifests_removed"] = result.manifests.removed;
    out["reverse_indexes_rewritten"] = result.reverse_indexes.rewritten;
    out["reverse_indexes_removed"] = result.reverse_indexes.removed;
    out["errors"] = result.failures;
    auto& builds = out["builds"] = nlohmann::ordered_json::array();
    for (const auto& build : plan->dropped_builds) {
      nlohmann::ordered_json entry = {{"project", build.project}, {"build", build.build}, {"host", build.host}};
      put_path(entry, "build_dir", build.build_dir);
      entry["time"] = build.newest;
      entry["targets"] = build.targets;
      builds.push_back(std::move(entry));
    }
    auto& corrections = out["times_corrected"] = nlohmann::ordered_json::array();
    for (const auto& fix : plan->corrections) {
      corrections.push_back({{"project", fix.project},
                             {"build", fix.build},
                             {"recorded", fix.recorded},
                             {"taken", fix.taken},
                             {"later_build", fix.later_build}});
    }
    write_out(context, dump_json(out));
  } else {
    const std::string verb = dry_run ? "would drop " : "dropped ";
    // Each build that loses events, then the counts.
    std::string listing;
    for (const auto& build : plan->dropped_builds) {
      std::string targets;
      for (size_t i = 0; i < build.targets.size() && i < 3; ++i) {
        targets += (i == 0 ? "" : ", ") + build.targets[i];
      }
      if (build.targets.size() > 3) {
        targets += " and " + std::to_string(build.targets.size() - 3) + " more";
      }
      listing += "gc: " + verb + "build " + build.build + " of " + build.project + " in "
                 + display_path(build.build_dir) + " on " + build.host + ", " + human_time(build.newest) + " ("
                 + (build.targets.size() == 1 ? "target " : "targets ") + targets + ")\n";
    }
    write_out(context, listing);
    write_out(
      context,
      "gc: " + verb + std::to_string(result.events_dropped) + " events of " + std::to_string(builds_dropped) + " of "
        + std::to_string(plan->builds_seen) + " builds; " + std::to_string(result.logs.removed) + " artifact logs "
        + (dry_run ? "would go" : "removed") + ", " + std::to_string(result.logs.rewritten)
        + (dry_run ? " would be rewritten" : " rewritten") + "; " + std::to_string(result.indexes.removed)
        + " build indexes " + (dry_run ? "would go" : "removed") + "; " + std::to_string(result.manifests.removed)
        + " input manifests " + (dry_run ? "would go" : "removed") + " (and their lines in "
        + std::to_string(result.reverse_indexes.removed + result.reverse_indexes.rewritten) + " reverse indexes)\n");
  }
  return result.failures.empty() ? k_exit_ok : k_exit_failure;
}

} // namespace

extern const Command k_gc_command{
  .name = "gc",
  .synopsis = "[--dry-run] [--missing-build-dirs] [--older-than AGE] [--keep-builds N] [--json]",
  .summary = "drop old builds' events (retention driven by the build index); artifacts and input manifests left "
             "without events go",
  .options = k_options,
  .run = run,
  .needs = Needs::store,
  .arity = {0, 0, "takes no arguments"},
  .access = [](const Args& args) { return args.flag("dry-run") ? store::Access::read : store::Access::update; },
  .validate = validate};

} // namespace fingerprint::cmd
