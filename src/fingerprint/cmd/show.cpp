#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/table.hpp>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print one JSON object"},
  {"algorithm", OptionKind::value, "A", "digest a FILE argument with A (default sha256)"},
};

std::vector<std::string>
event_row(const store::Event& event)
{
  std::string what(event.project);
  if (!event.version.empty()) {
    what += " " + event.version;
  }
  return {what, event.target, event.build, event.host, human_time(event.time), display_path(event.build_dir)};
}

std::string
human(const store::ArtifactRecord& record)
{
  std::string text = record.key.str() + "  " + std::to_string(record.size) + " bytes\n\nnames:\n";
  for (const auto& name : record.names) {
    text += "  " + display_path(name) + "\n";
  }
  const std::vector<std::string> header = {"PROJECT", "TARGET", "BUILD", "HOST", "TIME", "BUILD DIR"};
  auto section = [&](std::string_view title, const std::vector<store::Event>& events) {
    // Appended piece by piece: g++ 12 warns falsely (-Wrestrict) on
    // "literal" + std::string here.
    text += '\n';
    text += title;
    text += ":\n";
    if (events.empty()) {
      text += "  (none recorded)\n";
      return;
    }
    std::vector<std::vector<std::string>> rows{header};
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
  section(record.producers.empty() ? "produced by (origin unknown)" : "produced by", record.producers);
  section("consumed by", record.consumers);
  return text;
}

nlohmann::ordered_json
json(const store::ArtifactRecord& record)
{
  nlohmann::ordered_json object;
  object["digest"] = record.key.str();
  object["size"] = record.size;
  object["names"] = record.names;
  object["producers"] = nlohmann::ordered_json::array();
  for (const auto& event : record.producers) {
    object["producers"].push_back(event_json(event));
  }
  object["consumers"] = nlohmann::ordered_json::array();
  for (const auto& event : record.consumers) {
    object["consumers"].push_back(event_json(event));
  }
  return object;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const store::ArtifactRecord& record = *prepared.artifact;
  report_problems(context, prepared.store->location(), record.problems);
  write_out(context, args.flag("json") ? dump_json(json(record)) : human(record));
  return k_exit_ok;
}

} // namespace

extern const Command k_show_command{.name = "show",
                                    .synopsis = "[--json] FILE|DIGEST",
                                    .summary = "who produced an artifact, who consumed it, and its names",
                                    .options = k_options,
                                    .run = run,
                                    .needs = Needs::artifact,
                                    .arity = k_one_artifact};

} // namespace fingerprint::cmd
