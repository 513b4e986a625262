// gc: retention, driven by the build index. Which builds go is decided from
// the build indexes alone; then only the artifact logs those builds wrote
// to are read and rewritten (never a scan of every log).

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/util/text.hpp>

#include <cerrno>
#include <map>
#include <set>
#include <sys/stat.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"dry-run", OptionKind::flag, {}, "say what would go, change nothing"},
  {"missing-build-dirs", OptionKind::flag, {}, "drop builds on this host whose build tree no longer exists"},
  {"older-than", OptionKind::value, "AGE", "drop builds older than AGE: 90d, 12h, 30m, 2w, 3600s"},
  {"keep-builds", OptionKind::value, "N", "keep only the N newest builds of each project and target"},
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

// What gc decides about: one target's part of one build.
struct Unit
{
  std::string project;
  std::string target;
  std::string build;
  bool
  operator<(const Unit& other) const
  {
    return std::tie(project, target, build) < std::tie(other.project, other.target, other.build);
  }
};

struct UnitFacts
{
  std::string host;
  std::string build_dir;
  std::string newest; // RFC 3339: sorts by time
  size_t events = 0;
};

int
run(Invocation& call)
{
  const Args& args = call.args;
  Context& context = call.context;
  const auto& store = call.store;
  const bool dry_run = args.flag("dry-run");
  const bool missing_dirs = args.flag("missing-build-dirs");
  int64_t max_age = -1;
  if (auto age = args.value("older-than")) {
    max_age = parse_age(*age);
    if (max_age < 0) {
      print_error(context, "gc: --older-than: '" + *age + "' is not an age such as 90d, 12h, 30m, 2w or 3600s");
      return k_exit_usage;
    }
  }
  long keep = -1;
  if (auto text = args.value("keep-builds")) {
    char* end = nullptr;
    keep = std::strtol(text->c_str(), &end, 10);
    if (text->empty() || *end != '\0' || keep < 1) {
      print_error(context, "gc: --keep-builds: '" + *text + "' is not a number of builds (1 or more)");
      return k_exit_usage;
    }
  }
  if (!missing_dirs && max_age < 0 && keep < 0) {
    print_error(context, "gc: say what goes: --missing-build-dirs, --older-than AGE and/or --keep-builds N");
    return k_exit_usage;
  }
  auto builds = store->list_builds();
  if (!builds) {
    print_error(context, builds.error().message);
    return k_exit_failure;
  }

  // 1. The build index: every (project, target, build) with its host, tree
  // and newest time.
  std::map<Unit, UnitFacts> units;
  std::vector<store::LogProblem> problems;
  {
    Progress progress(context.err, "gc", "build indexes read");
    size_t done = 0;
    auto read = store->for_each_build({}, [&](const store::BuildRef&, store::LogContents& index) {
      problems.insert(problems.end(), index.problems.begin(), index.problems.end());
      for (const auto& event : index.events) {
        auto& facts = units[{event.project, event.target, event.build}];
        facts.host = event.host;
        facts.build_dir = event.build_dir;
        facts.newest = std::max(facts.newest, event.time);
        ++facts.events;
      }
      progress(++done, builds->size());
    });
    if (!read) {
      print_error(context, read.error().message);
      return k_exit_failure;
    }
  }
  report_problems(context, store->location(), problems);

  // 2. What goes.
  const std::string host = hook::host_name();
  const int64_t now = util::now_ns();
  std::map<std::string, bool> tree_exists;
  std::set<Unit> dropped;
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, Unit>>> by_target;
  for (const auto& [unit, facts] : units) {
    bool drop = false;
    if (missing_dirs && facts.host == host) {
      auto [it, inserted] = tree_exists.try_emplace(facts.build_dir, false);
      if (inserted) {
        struct stat st
        {};
        // Only "it is not there" drops; a tree we may not look into stays.
        it->second = ::stat(facts.build_dir.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
      }
      drop = !it->second;
    }
    if (max_age >= 0) {
      const int64_t when = util::parse_rfc3339(facts.newest);
      drop = drop || (when >= 0 && now - when > max_age);
    }
    if (drop) {
      dropped.insert(unit);
    } else if (keep > 0) {
      by_target[{unit.project, unit.target}].emplace_back(facts.newest, unit);
    }
  }
  for (auto& [target, list] : by_target) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = static_cast<size_t>(keep); i < list.size(); ++i) {
      dropped.insert(list[i].second);
    }
  }
  auto is_dropped = [&](const store::Event& event) {
    return dropped.contains({event.project, event.target, event.build});
  };

  // 3. The logs those units wrote to: from their builds' indexes.
  std::set<std::string> logs; // digests
  std::set<std::pair<std::string, std::string>> touched_builds;
  for (const auto& unit : dropped) {
    touched_builds.emplace(unit.project, unit.build);
  }
  size_t events_dropped = 0;
  size_t indexes_removed = 0;
  size_t indexes_rewritten = 0;
  std::vector<std::string> failures;
  for (const auto& [project, build] : touched_builds) {
    const store::BuildRef ref{project, build};
    auto index = store->read_build(ref);
    if (!index) {
      failures.push_back(index.error().message);
      continue;
    }
    for (const auto& event : index->events) {
      if (is_dropped(event)) {
        logs.insert(event.digest);
        if (event.event == store::EventKind::installed && event.from != event.digest) {
          logs.insert(event.from); // its link in the origin's log
        }
      }
    }
  }
  size_t logs_removed = 0;
  size_t logs_rewritten = 0;
  {
    Progress progress(context.err, "gc", dry_run ? "artifact logs looked at" : "artifact logs rewritten");
    size_t done = 0;
    for (const auto& digest : logs) {
      auto key = store::parse_digest_key(digest);
      auto result =
        key ? store->remove_events(*key, is_dropped, dry_run) : Expected<store::CompactionResult>(key.error());
      if (!result) {
        failures.push_back(result.error().message);
      } else if (result->events_after != result->events_before) {
        events_dropped += result->events_before - result->events_after;
        (result->removed ? logs_removed : logs_rewritten) += 1;
      }
      progress(++done, logs.size());
    }
  }
  // The indexes last: were gc interrupted, the indexes would still name
  // every log it had not cleaned yet, and a second run would finish.
  for (const auto& [project, build] : touched_builds) {
    auto result = store->remove_build_events({project, build}, is_dropped, dry_run);
    if (!result) {
      failures.push_back(result.error().message);
    } else {
      (result->removed ? indexes_removed : indexes_rewritten) += 1;
    }
  }
  for (const auto& failure : failures) {
    print_error(context, "gc: " + failure);
  }

  std::set<std::string> builds_dropped;
  for (const auto& unit : dropped) {
    builds_dropped.insert(unit.project + '\0' + unit.build);
  }
  if (args.flag("json")) {
    nlohmann::ordered_json out;
    out["dry_run"] = dry_run;
    out["builds_seen"] = builds->size();
    out["builds_dropped"] = builds_dropped.size();
    out["targets_dropped"] = dropped.size();
    out["events_dropped"] = events_dropped;
    out["artifact_logs_rewritten"] = logs_rewritten;
    out["artifact_logs_removed"] = logs_removed;
    out["build_indexes_rewritten"] = indexes_rewritten;
    out["build_indexes_removed"] = indexes_removed;
    out["errors"] = failures;
    write_out(context, dump_json(out));
  } else {
    const std::string verb = dry_run ? "would drop " : "dropped ";
    write_out(context,
              "gc: " + verb + std::to_string(events_dropped) + " events of " + std::to_string(builds_dropped.size())
                + " of " + std::to_string(builds->size()) + " builds; " + std::to_string(logs_removed)
                + " artifact logs " + (dry_run ? "would go" : "removed") + ", " + std::to_string(logs_rewritten)
                + (dry_run ? " would be rewritten" : " rewritten") + "; " + std::to_string(indexes_removed)
                + " build indexes " + (dry_run ? "would go" : "removed") + "\n");
  }
  return failures.empty() ? k_exit_ok : k_exit_failure;
}

} // namespace

const Command&
gc_command()
{
  static const Command k_command{
    .name = "gc",
    .synopsis = "[--dry-run] [--missing-build-dirs] [--older-than AGE] [--keep-builds N] [--json]",
    .summary = "drop old builds' events (retention driven by the build index); artifacts left without events go",
    .options = k_options,
    .run = run,
    .needs = Needs::store,
    .arity = {0, 0, "takes no arguments"},
    .access = [](const Args& args) { return args.flag("dry-run") ? store::Access::read : store::Access::update; }};
  return k_command;
}

} // namespace fingerprint::cmd
