#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/table.hpp>

#include <set>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print one JSON object"},
  k_role_option,
  {"algorithm", OptionKind::value, "A", "digest a FILE argument with A (default sha256)"},
  k_trusted_keys_option,
};

std::string
joined(const std::set<std::string>& names)
{
  std::string text;
  for (const auto& name : names) {
    text += (text.empty() ? "" : " or ") + name;
  }
  return text;
}

// A consumer's row has its ROLE after its TARGET.
std::vector<std::string>
event_row(const store::Event& event)
{
  std::string what(event.project);
  if (!event.version.empty()) {
    what += " " + event.version;
  }
  std::vector<std::string> row = {what,
                                  event.target + signature_mark(event),
                                  event.build,
                                  event.host,
                                  human_time(event.time),
                                  display_path(event.build_dir)};
  if (event.event == store::EventKind::consumed) {
    row.insert(row.begin() + 2, query::role_of(event));
  }
  return row;
}

// `roles`: --role, which the consumers shown passed (empty: all of them).
std::string
human(const store::ArtifactRecord& record,
      const std::set<std::string>& roles,
      const std::optional<query::PackageOrigin>& package,
      const store::Store& store,
      Context& context)
{
  std::string text = record.key.str() + "  " + std::to_string(record.size) + " bytes\n\nnames:\n";
  for (const auto& name : record.names) {
    text += "  " + display_path(name) + "\n";
  }
  auto section = [&](std::string_view title, const std::vector<store::Event>& events, bool consumers) {
    // Appended piece by piece: g++ 12 warns falsely (-Wrestrict) on
    // "literal" + std::string here.
    text += '\n';
    text += title;
    text += ":\n";
    if (events.empty()) {
      text +=
        consumers && !roles.empty() ? "  (none recorded with role " + joined(roles) + ")\n" : "  (none recorded)\n";
      return;
    }
    std::vector<std::vector<std::string>> rows{{"PROJECT", "TARGET", "BUILD", "HOST", "TIME", "BUILD DIR"}};
    if (consumers) {
      rows.front().insert(rows.front().begin() + 2, "ROLE");
    }
    for (const auto& event : events) {
      rows.push_back(event_row(event));
      if (event.event == store::EventKind::installed) {
        // A human reads the first 12 hex digits; --json has them all.
        rows.back()[1] += event.from == event.digest ? " (installed unchanged)"
                                                     : " (installed from " + event.from.substr(0, 19) + "...)";
      }
    }
    text += util::format_table(rows, 2);
  };
  // A file no fingerprinted build made may still have an origin: the
  // package that installed it.
  if (record.producers.empty() && package) {
    text += "\nproduced by (no fingerprinted build):\n  " + package_text(*package) + ", which installed "
            + display_path(package->path) + "\n";
  } else {
    section(record.producers.empty() ? "produced by (origin unknown)" : "produced by", record.producers, false);
    // What each producing build was built from and with.
    std::set<std::pair<std::string, std::string>> told;
    for (const auto& event : record.producers) {
      if (event.event != store::EventKind::produced || !told.emplace(event.project, event.build).second) {
        continue;
      }
      if (auto provenance = build_provenance(store, {event.project, event.build}, context)) {
        text += "  build " + event.build + " of " + event.project + ":\n" + provenance_text(*provenance, "    ");
      }
    }
  }
  section("consumed by", record.consumers, true);
  return text;
}

nlohmann::ordered_json
json(const store::ArtifactRecord& record,
     const std::optional<query::PackageOrigin>& package,
     const std::optional<std::pair<std::string, std::string>>& matched,
     const store::Store& store,
     Context& context)
{
  nlohmann::ordered_json object;
  object["digest"] = record.key.str();
  object["size"] = record.size;
  object["names"] = record.names;
  object["producers"] = nlohmann::ordered_json::array();
  for (const auto& event : record.producers) {
    object["producers"].push_back(edge_json(event));
    if (event.event == store::EventKind::produced) {
      const auto provenance = build_provenance(store, {event.project, event.build}, context);
      object["producers"].back()["provenance"] = provenance ? *provenance : nlohmann::ordered_json();
    }
  }
  object["consumers"] = nlohmann::ordered_json::array();
  for (const auto& event : record.consumers) {
    object["consumers"].push_back(edge_json(event));
  }
  object["package"] = package ? package_json(*package) : nlohmann::ordered_json();
  if (matched) {
    // The record is the product's whose build-id the file has.
    object["matched_by_build_id"] = {{"build_id", matched->first}, {"digest", matched->second}};
  }
  return object;
}

int
validate(const Args& args, Context& context)
{
  if (auto roles = role_filter(args); !roles) {
    print_error(context, "show: " + roles.error().message);
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  store::ArtifactRecord& record = *prepared.artifact;
  report_problems(context, prepared.store->location(), record.problems);
  const std::set<std::string> roles = role_filter(args).value();
  std::erase_if(record.consumers, [&](const store::Event& event) { return !role_matches(roles, event); });
  // Looked up only for what no fingerprinted build made.
  std::optional<query::PackageOrigin> package;
  if (record.producers.empty()) {
    std::vector<std::string> paths = record.names;
    if (const std::string& argument = args.positional().front(); !store::looks_like_digest_key(argument)) {
      paths.insert(paths.begin(), absolute_path(argument));
    }
    package = package_of(paths);
  }
  write_out(context,
            args.flag("json") ? dump_json(json(record, package, prepared.matched_by_build_id, *prepared.store, context))
                              : human(record, roles, package, *prepared.store, context));
  return k_exit_ok;
}

} // namespace

extern const Command k_show_command{.name = "show",
                                    .synopsis = "[--json] [--role ROLE[,ROLE...]] FILE|DIGEST",
                                    .summary = "who produced an artifact, who consumed it, and its names",
                                    .options = k_options,
                                    .run = run,
                                    .needs = Needs::artifact,
                                    .arity = k_one_artifact,
                                    .validate = validate};

} // namespace fingerprint::cmd
