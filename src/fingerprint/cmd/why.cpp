#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/query/inputs.hpp>
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

// One artifact of the chain, from ARTIFACT to CONSUMER, and the build that
// made it (produced, or installed, it).
struct Hop
{
  std::string digest;
  std::optional<store::Event> producer;        // none: no recorded build made these bytes
  std::optional<query::PackageOrigin> package; // then, the Debian package that installed it
};

bool
same_build(const store::Event& a, const store::Event& b)
{
  return a.project == b.project && a.target == b.target && a.build == b.build && a.build_dir == b.build_dir;
}

// The producer of each artifact of `chain`. A step's event is the build that
// made the next artifact (a consumed event's build produced its product, an
// installed event's build installed the copy): that build's own event is
// looked for in the artifact's record, for its path; the first artifact's is
// the newest build that produced it (else installed it).
Expected<std::vector<Hop>>
hops_of(const store::Store& store,
        const store::DigestKey& artifact,
        const std::vector<store::Event>& chain,
        std::vector<store::LogProblem>& problems)
{
  std::vector<Hop> hops;
  for (size_t i = 0; i <= chain.size(); ++i) {
    Hop hop;
    hop.digest = i == 0                                              ? artifact.str()
                 : chain[i - 1].event == store::EventKind::installed ? chain[i - 1].digest
                                                                     : chain[i - 1].product;
    auto key = store::parse_digest_key(hop.digest);
    if (!key) {
      return key.error();
    }
    auto record = store::load_record(store, *key);
    if (!record) {
      return record.error();
    }
    problems.insert(problems.end(), record->problems.begin(), record->problems.end());
    const store::Event* best = nullptr;
    auto better = [&](const store::Event& event) {
      if (best == nullptr) {
        return true;
      }
      if (i > 0) {
        return !same_build(*best, chain[i - 1]) && same_build(event, chain[i - 1]);
      }
      // Produced beats installed; then the newest.
      if (best->event != event.event) {
        return event.event == store::EventKind::produced;
      }
      return best->time <= event.time;
    };
    for (const store::Event& event : record->producers) {
      if (better(event)) {
        best = &event;
      }
    }
    if (best != nullptr && (i == 0 || same_build(*best, chain[i - 1]))) {
      hop.producer = *best;
    } else if (i > 0) {
      // The step's own event says who made it, even when the artifact's
      // log lacks the event (a log that gc or fsck trimmed).
      hop.producer = chain[i - 1];
      hop.producer->event =
        chain[i - 1].event == store::EventKind::installed ? store::EventKind::installed : store::EventKind::produced;
      hop.producer->digest = hop.digest;
      hop.producer->path.clear();
      hop.producer->product.clear();
      hop.producer->role.clear();
    } else {
      // The root, which no fingerprinted build made: a package's file?
      std::vector<std::string> paths = record->names;
      if (!chain.empty()) {
        paths.insert(paths.begin(), chain.front().path);
      }
      hop.package = package_of(paths);
    }
    hops.push_back(std::move(hop));
  }
  return hops;
}

std::string
made_by(const Hop& hop)
{
  if (!hop.producer) {
    return hop.package ? "no recorded build produced it: " + package_text(*hop.package)
                       : "origin unknown (no recorded build produced it)";
  }
  const store::Event& event = *hop.producer;
  return std::string(event.event == store::EventKind::installed ? "installed" : "produced") + " by " + event.project
         + " " + event.target + ", build " + event.build;
}

nlohmann::ordered_json
hop_json(const Hop& hop)
{
  nlohmann::ordered_json object;
  object["digest"] = hop.digest;
  object["producer"] = hop.producer ? edge_json(*hop.producer) : nlohmann::ordered_json();
  if (hop.package) {
    object["package"] = package_json(*hop.package);
  }
  return object;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const std::string& consumer_argument = args.positional()[0];
  const std::string& artifact_argument = args.positional()[1];
  auto consumer = resolve_artifact(*prepared.store, consumer_argument, prepared.algorithm);
  auto artifact = consumer ? resolve_artifact(*prepared.store, artifact_argument, prepared.algorithm) : consumer;
  if (!consumer || !artifact) {
    const Error& error = (!consumer ? consumer : artifact).error();
    print_error(context, error.message);
    return exit_status_of(error);
  }
  // A FILE whose bytes are not recorded: a stripped or split copy of a
  // product stands for that product.
  nlohmann::ordered_json matched = nlohmann::ordered_json::array();
  for (auto [argument, key] : {std::pair{&consumer_argument, &*consumer}, std::pair{&artifact_argument, &*artifact}}) {
    if (store::looks_like_digest_key(*argument)) {
      continue;
    }
    auto log = prepared.store->read_log(*key);
    if (!log || !log->events.empty()) {
      continue;
    }
    if (auto match = match_by_build_id(*prepared.store, *argument, *key, context)) {
      if (auto original = store::parse_digest_key(match->product.digest)) {
        matched.push_back({{"file", absolute_path(*argument)},
                           {"digest", key->str()},
                           {"build_id", match->build_id},
                           {"product", match->product.digest}});
        *key = std::move(*original);
      }
    }
  }
  std::vector<store::LogProblem> problems;
  auto chain = prepared.store->find_chain(*artifact, *consumer, problems);
  if (!chain) {
    print_error(context, chain.error().message);
    return k_exit_failure;
  }
  const bool depends = !chain->empty() || *artifact == *consumer;
  std::vector<Hop> hops;
  if (depends) {
    auto found = hops_of(*prepared.store, *artifact, *chain, problems);
    if (!found) {
      print_error(context, found.error().message);
      return k_exit_failure;
    }
    hops = std::move(*found);
  }
  report_problems(context, prepared.store->location(), problems);
  if (args.flag("json")) {
    // chain[i] leads from artifacts[i] to artifacts[i + 1]; each artifact
    // with the build that made it.
    nlohmann::ordered_json out;
    out["consumer"] = consumer->str();
    out["artifact"] = artifact->str();
    out["depends"] = depends;
    if (!matched.empty()) {
      out["matched_by_build_id"] = matched;
    }
    out["chain"] = nlohmann::ordered_json::array();
    for (const auto& event : *chain) {
      out["chain"].push_back(edge_json(event));
    }
    out["artifacts"] = nlohmann::ordered_json::array();
    for (const auto& hop : hops) {
      out["artifacts"].push_back(hop_json(hop));
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
  auto name = [&](size_t i) {
    // The path the next step read it under; else the one it was made under.
    if (i < chain->size() && (*chain)[i].event == store::EventKind::consumed) {
      return display_path(base_name((*chain)[i].path)) + " ";
    }
    if (i == chain->size()) {
      return base_name(consumer_argument) + " ";
    }
    if (hops[i].producer && !hops[i].producer->path.empty()) {
      return display_path(base_name(hops[i].producer->path)) + " ";
    }
    return std::string();
  };
  for (size_t i = 0; i < chain->size(); ++i) {
    const store::Event& event = (*chain)[i];
    text += indent + name(i) + "(" + short_digest(hops[i].digest) + "), " + made_by(hops[i]) + "\n";
    if (event.event == store::EventKind::installed) {
      // The step leads from the build-tree file to its installed copy.
      text += indent + "  installed by " + event.project + " " + event.target + ", build " + event.build + " as:\n";
    } else {
      const std::string role = query::role_of(event);
      text += indent + "  consumed by " + event.project + " " + event.target + ", build " + event.build + " in "
              + display_path(event.build_dir) + (role == "interface" ? " as an " : " as a ") + role
              + " input, to make:\n";
    }
    indent += "  ";
  }
  text += indent + name(chain->size()) + "(" + short_digest(consumer->str()) + "), " + made_by(hops.back()) + "\n";
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
