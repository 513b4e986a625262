#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/artifact_record.hpp>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print the chain as JSON"},
  {"algorithm", OptionKind::value, "A", "digest FILE arguments with A (default sha256)"},
};

std::string
short_digest(const std::string& digest)
{
  return digest.substr(0, 19) + "...";
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const std::string& consumer_argument = args.positional()[0];
  const std::string& artifact_argument = args.positional()[1];
  auto consumer = resolve_artifact(consumer_argument, prepared.algorithm);
  auto artifact = consumer ? resolve_artifact(artifact_argument, prepared.algorithm) : consumer;
  if (!consumer || !artifact) {
    print_error(context, (!consumer ? consumer : artifact).error().message);
    return k_exit_failure;
  }
  std::vector<store::LogProblem> problems;
  auto chain = prepared.store->find_chain(*artifact, *consumer, problems);
  if (!chain) {
    print_error(context, chain.error().message);
    return k_exit_failure;
  }
  report_problems(context, prepared.store->location(), problems);
  const bool depends = !chain->empty() || *artifact == *consumer;
  if (args.flag("json")) {
    nlohmann::ordered_json out;
    out["consumer"] = consumer->str();
    out["artifact"] = artifact->str();
    out["depends"] = depends;
    out["chain"] = nlohmann::ordered_json::array();
    for (const auto& event : *chain) {
      out["chain"].push_back(event_json(event));
    }
    write_out(context, dump_json(out));
    return depends ? k_exit_ok : k_exit_failure;
  }
  if (!depends) {
    write_out(context,
              consumer_argument + " does not depend on " + artifact_argument + " in the store "
                + prepared.store->location() + "\n");
    return k_exit_failure;
  }
  std::string text = consumer_argument + " depends on " + artifact_argument + ":\n";
  std::string indent = "  ";
  for (const auto& event : *chain) {
    if (event.event == store::EventKind::installed) {
      // The step leads from the build-tree file to its installed copy.
      text += indent + short_digest(event.from) + "\n";
      text += indent + "  installed by " + event.project + " build " + event.build + " as:\n";
    } else {
      text += indent + display_path(base_name(event.path)) + " (" + short_digest(event.digest) + ")\n";
      text += indent + "  consumed by " + event.project + " " + event.target + ", build " + event.build + " in "
              + display_path(event.build_dir) + ", to make:\n";
    }
    indent += "  ";
  }
  text += indent + base_name(consumer_argument) + " (" + short_digest(consumer->str()) + ")\n";
  write_out(context, text);
  return k_exit_ok;
}

} // namespace

extern const Command k_why_command{.name = "why",
                                   .synopsis = "[--json] CONSUMER ARTIFACT",
                                   .summary = "the chain of builds through which CONSUMER was made from ARTIFACT",
                                   .options = k_options,
                                   .run = run,
                                   .needs = Needs::store,
                                   .arity = {2, 2, "give CONSUMER and ARTIFACT (each a FILE or DIGEST)"}};

} // namespace fingerprint::cmd
