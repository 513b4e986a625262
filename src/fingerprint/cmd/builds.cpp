// `builds` and `build show`: the build index, read one index file per build
// (never the artifact logs), with the input manifests its products name
// (each once): what a build consumed is in them.

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/build_summary.hpp>
#include <fingerprint/store/spool.hpp>
#include <fingerprint/util/table.hpp>

#include <map>
#include <set>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_builds_options[] = {
  {"project", OptionKind::value, "P", "only project P's builds"},
  {"json", OptionKind::flag, {}, "print a JSON array"},
};

constexpr OptionSpec k_build_options[] = {
  {"json", OptionKind::flag, {}, "print one JSON object"},
  k_trusted_keys_option,
};

// One build as its index tells it.
struct BuildSummary
{
  store::BuildRef ref;
  std::string build_dir;
  std::string host;
  std::string first_time; // RFC 3339 strings sort by time
  std::string last_time;
  std::set<std::string> produced; // digests
  std::set<std::string> consumed;
  size_t installed = 0;
  std::vector<store::Event> events;
};

// The index's events, then the consumed events of its products' manifests;
// `keep_events`: in the summary (build show), not only counted (builds).
BuildSummary
summarize(const store::BuildRef& ref,
          std::vector<store::Event> events,
          query::ManifestInputs& manifests,
          std::vector<store::LogProblem>& problems,
          bool keep_events)
{
  const size_t indexed = events.size();
  for (size_t i = 0; i < indexed; ++i) {
    if (!events[i].inputs.empty()) {
      auto inputs = manifests.of(events[i], problems);
      events.insert(events.end(), std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end()));
    }
  }
  BuildSummary summary;
  summary.ref = ref;
  for (const auto& event : events) {
    if (summary.first_time.empty() || event.time < summary.first_time) {
      summary.first_time = event.time;
    }
    summary.last_time = std::max(summary.last_time, event.time);
    summary.build_dir = event.build_dir;
    summary.host = event.host;
    switch (event.event) {
      case store::EventKind::produced:
        summary.produced.insert(event.digest);
        break;
      case store::EventKind::consumed:
        summary.consumed.insert(event.digest);
        break;
      case store::EventKind::installed:
        ++summary.installed;
        break;
    }
  }
  if (keep_events) {
    summary.events = std::move(events);
  }
  return summary;
}

// "4a58c0038f8f", "4a58c0038f8f+dirty", or "-" without a git commit.
std::string
short_commit(const std::optional<nlohmann::ordered_json>& provenance)
{
  if (!provenance) {
    return "-";
  }
  const auto source = provenance->find("source");
  if (source == provenance->end() || !source->is_object() || !(*source)["commit"].is_string()) {
    return "-";
  }
  std::string commit = (*source)["commit"].get<std::string>().substr(0, 12);
  if ((*source)["dirty"].is_boolean() && (*source)["dirty"].get<bool>()) {
    commit += "+dirty";
  }
  return commit;
}

// `builds` lists a store::BuildSummary, `build show` this file's, which
// keeps the events: one JSON shape for both.
nlohmann::ordered_json
summary_json(const store::BuildSummary& summary, const std::optional<nlohmann::ordered_json>& provenance)
{
  nlohmann::ordered_json object;
  object["project"] = summary.ref.project;
  object["build"] = summary.ref.build;
  put_path(object, "build_dir", summary.build_dir);
  object["host"] = summary.host;
  object["time"] = summary.first_time;
  object["last_time"] = summary.last_time;
  object["produced"] = summary.produced;
  object["consumed"] = summary.consumed;
  object["installed"] = summary.installed;
  object["provenance"] = provenance ? *provenance : nlohmann::ordered_json();
  return object;
}

nlohmann::ordered_json
summary_json(const BuildSummary& summary, const std::optional<nlohmann::ordered_json>& provenance)
{
  return summary_json(store::BuildSummary{summary.ref,
                                          summary.build_dir,
                                          summary.host,
                                          summary.first_time,
                                          summary.last_time,
                                          summary.produced.size(),
                                          summary.consumed.size(),
                                          summary.installed},
                      provenance);
}

int
run_builds(const Args& args, Context& context, Prepared& prepared)
{
  const auto project = args.value("project");
  std::vector<store::LogProblem> problems;
  // From the store's summary of the build index where it is up to date
  // (store/build_summary.hpp), else from each index and its manifests.
  auto summaries = store::build_summaries(*prepared.store, project.value_or(""), problems);
  if (!summaries) {
    print_error(context, summaries.error().message);
    return k_exit_failure;
  }
  report_problems(context, prepared.store->location(), problems);
  // Builds whose events wait in this machine's journal are not listed yet:
  // say so, on standard error (the output is the store's, alike on both).
  if (store::is_database_url(prepared.store->location())) {
    if (auto spool = store::Spool::for_database(prepared.store->location()); spool && spool->has_waiting()) {
      if (const auto waiting = spool->contents(); waiting.calls > 0) {
        print_warning(context, store::Spool::waiting_note(waiting, *spool));
      }
    }
  }
  // Oldest first, like a log: the newest build is the last line.
  std::stable_sort(
    summaries->begin(), summaries->end(), [](const store::BuildSummary& a, const store::BuildSummary& b) {
      return a.first_time < b.first_time;
    });
  if (args.flag("json")) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& summary : *summaries) {
      array.push_back(summary_json(summary, build_provenance(*prepared.store, summary.ref, context)));
    }
    write_out(context, dump_json(array));
    return k_exit_ok;
  }
  if (summaries->empty()) {
    write_out(context,
              project ? "no builds of project " + *project + " recorded in " + prepared.store->location() + "\n"
                      : "no builds recorded in " + prepared.store->location() + "\n");
    return project ? k_exit_failure : k_exit_ok;
  }
  std::vector<std::vector<std::string>> rows{
    {"PROJECT", "BUILD", "TIME", "HOST", "COMMIT", "PRODUCED", "CONSUMED", "BUILD DIR"}};
  for (const auto& summary : *summaries) {
    rows.push_back({summary.ref.project,
                    summary.ref.build,
                    human_time(summary.first_time),
                    summary.host,
                    short_commit(build_provenance(*prepared.store, summary.ref, context)),
                    std::to_string(summary.produced),
                    std::to_string(summary.consumed),
                    display_path(summary.build_dir)});
  }
  write_out(context, util::format_table(rows));
  return k_exit_ok;
}

constexpr std::string_view k_build_usage =
  "usage: fingerprint build show PROJECT BUILD (fingerprint builds lists them)";

int
validate_build(const Args& args, Context& context)
{
  if (!args.positional().empty() && args.positional().front() != "show") {
    print_error(context, "build: " + std::string(k_build_usage));
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run_build(const Args& args, Context& context, Prepared& prepared)
{
  const auto& words = args.positional();
  const store::BuildRef ref{words[1], words[2]};
  auto index =
    read_build_index(*prepared.store, context, ref, " (fingerprint builds --project " + ref.project + " lists them)");
  if (!index) {
    return k_exit_failure;
  }
  std::vector<store::LogProblem> problems;
  query::ManifestInputs manifests(*prepared.store);
  const BuildSummary summary = summarize(ref, std::move(index->events), manifests, problems, true);
  report_problems(context, prepared.store->location(), problems);
  const auto provenance = build_provenance(*prepared.store, ref, context);
  if (args.flag("json")) {
    auto object = summary_json(summary, provenance);
    for (const char* kind : {"produced", "consumed", "installed"}) {
      object[std::string(kind) + "_events"] = nlohmann::ordered_json::array();
    }
    for (const auto& event : summary.events) {
      object[std::string(store::event_kind_name(event.event)) + "_events"].push_back(edge_json(event));
    }
    write_out(context, dump_json(object));
    return k_exit_ok;
  }
  std::string text = "build " + ref.build + " of " + ref.project + " in " + display_path(summary.build_dir) + " on "
                     + summary.host + ", " + human_time(summary.first_time) + "\n";
  if (provenance) {
    text += provenance_text(*provenance, "  ");
  }
  auto section = [&](store::EventKind kind, std::string_view title, bool with_product) {
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"TARGET", "DIGEST", "PATH"});
    if (with_product) {
      rows.back().insert(rows.back().begin() + 1, "ROLE");
      rows.back().push_back("FOR");
    }
    std::map<std::string, std::string> product_paths;
    for (const auto& event : summary.events) {
      if (event.event == store::EventKind::produced) {
        product_paths[event.digest] = display_path(base_name(event.path));
      }
    }
    for (const auto& event : summary.events) {
      if (event.event != kind) {
        continue;
      }
      // A human reads the first 12 hex digits; --json has them all.
      rows.push_back({event.target + signature_mark(event), event.digest.substr(0, 19), display_path(event.path)});
      if (with_product) {
        rows.back().insert(rows.back().begin() + 1, query::role_of(event));
        auto product = product_paths.find(event.product);
        rows.back().push_back(product != product_paths.end() ? product->second : event.product.substr(0, 19));
      }
    }
    text += '\n';
    text += title;
    text += rows.size() == 1 ? ": none\n" : ":\n" + util::format_table(rows, 2);
  };
  section(store::EventKind::produced, "produced", false);
  section(store::EventKind::consumed, "consumed", true);
  if (summary.installed > 0) {
    section(store::EventKind::installed, "installed", false);
  }
  write_out(context, text);
  return k_exit_ok;
}

} // namespace

extern const Command k_builds_command{
  .name = "builds",
  .synopsis = "[--project P] [--json]",
  .summary = "list the recorded builds: project, build id, time, host, counts, build tree",
  .options = k_builds_options,
  .run = run_builds,
  .needs = Needs::store,
  .arity = {0, 0, "takes no arguments (did you mean: fingerprint build show PROJECT BUILD?)"}};

extern const Command k_build_command{"build",
                                     "show PROJECT BUILD [--json]",
                                     "what one build produced and consumed",
                                     k_build_options,
                                     run_build,
                                     Needs::store,
                                     {3, 3, k_build_usage},
                                     nullptr,
                                     validate_build};

} // namespace fingerprint::cmd
