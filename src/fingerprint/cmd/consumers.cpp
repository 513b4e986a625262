#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/query/history.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/table.hpp>

#include <map>
#include <set>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print a JSON array of consumer events"},
  {"transitive", OptionKind::flag, {}, "also who consumed the consumers' products (with their depth)"},
  k_role_option,
  {"all-versions", OptionKind::flag, {}, "the consumers of every version seen at FILE's path, oldest first"},
  k_trusted_keys_option,
  {"algorithm", OptionKind::value, "A", "digest a FILE argument with A (default sha256)"},
};

// The names the hits' products were produced under, for people, by
// digest; a product whose producer is not recorded is named by its digest.
// Its producers are in its own log: no need for the consumers its
// manifests name (load_record). One read for all of them.
std::map<std::string, std::string>
product_names(const store::Store& store, const std::vector<store::ConsumerHit>& hits)
{
  std::map<std::string, std::string> names;
  std::vector<store::DigestKey> products;
  for (const auto& hit : hits) {
    if (names.emplace(hit.event.product, hit.event.product).second) {
      if (auto key = store::parse_digest_key(hit.event.product)) {
        products.push_back(std::move(*key));
      }
    }
  }
  if (auto logs = store.read_logs(products)) {
    for (auto& [product, log] : *logs) {
      auto key = store::parse_digest_key(product);
      if (!key) {
        continue;
      }
      if (auto record = store::fold_record(*key, std::move(log)); !record.producers.empty()) {
        names[product] = display_path(record.producers.front().path);
      }
    }
  }
  return names;
}

// The consumers of `key` whose edge to it has one of `roles` and, with
// `transitive`, everyone downstream of those: --role filters the first hop
// only (what consumed the artifact itself, or an installed copy of it), as
// the question it answers is "who took this file in this way, and what did
// that reach". The walk is store::walk_consumers() over records whose first
// hop is filtered as they are loaded, so a database's own walk is not used:
// it knows nothing of roles.
Expected<std::vector<store::ConsumerHit>>
consumers_by_role(const store::Store& store,
                  const store::DigestKey& key,
                  bool transitive,
                  const std::set<std::string>& roles,
                  std::vector<store::LogProblem>& problems)
{
  if (!transitive) {
    auto hits = store.find_consumers(key, false, problems);
    if (hits) {
      std::erase_if(*hits, [&](const store::ConsumerHit& hit) { return !role_matches(roles, hit.event); });
    }
    return hits;
  }
  std::set<std::string> first_hop{key.str()}; // the artifact and its installed copies
  return store::walk_consumers(
    [&](const store::DigestKey& at) -> Expected<store::ArtifactRecord> {
      auto record = store::load_record(store, at);
      if (record && first_hop.contains(at.str())) {
        std::erase_if(record->consumers, [&](const store::Event& event) { return !role_matches(roles, event); });
        for (const store::Event& copy : record->installed_copies) {
          first_hop.insert(copy.digest);
        }
      }
      return record;
    },
    key,
    true,
    problems);
}

int
validate(const Args& args, Context& context)
{
  if (auto roles = role_filter(args); !roles) {
    print_error(context, "consumers: " + roles.error().message);
    return k_exit_usage;
  }
  if (args.flag("all-versions") && !args.positional().empty()
      && store::looks_like_digest_key(args.positional().front())) {
    print_error(context, "consumers: --all-versions takes a FILE (the versions are those seen at its path)");
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  // Problems in the artifact's own log are met again, and reported, below.
  const store::DigestKey& key = prepared.artifact->key;
  const bool transitive = args.flag("transitive");
  const std::set<std::string> roles = role_filter(args).value();
  std::vector<store::LogProblem> problems;
  auto consumers_of = [&](const store::DigestKey& of) {
    return roles.empty() ? prepared.store->find_consumers(of, transitive, problems)
                         : consumers_by_role(*prepared.store, of, transitive, roles, problems);
  };
  // --all-versions: of every version seen at the file's path, oldest first.
  std::vector<store::DigestKey> versions{key};
  if (args.flag("all-versions")) {
    auto seen =
      query::versions_at(*prepared.store, query::spellings_of(absolute_path(args.positional().front())), problems);
    if (!seen) {
      print_error(context, seen.error().message);
      return k_exit_failure;
    }
    versions.clear();
    for (const query::Version& version : *seen) {
      if (auto parsed = store::parse_digest_key(version.digest); parsed && parsed->algorithm == key.algorithm) {
        versions.push_back(std::move(*parsed));
      }
    }
  }
  Expected<std::vector<store::ConsumerHit>> hits = std::vector<store::ConsumerHit>();
  for (const store::DigestKey& version : versions) {
    auto of_version = consumers_of(version);
    if (!of_version) {
      hits = of_version.error();
      break;
    }
    hits->insert(hits->end(), of_version->begin(), of_version->end());
  }
  if (!hits) {
    print_error(context, hits.error().message);
    return k_exit_failure;
  }
  report_problems(context, prepared.store->location(), problems);

  if (args.flag("json")) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& hit : *hits) {
      auto object = edge_json(hit.event);
      if (transitive) {
        object["depth"] = hit.depth;
      }
      array.push_back(std::move(object));
    }
    write_out(context, dump_json(array));
    return k_exit_ok;
  }
  if (hits->empty()) {
    std::string with_role;
    for (const auto& role : roles) {
      with_role += (with_role.empty() ? " with role " : " or ") + role;
    }
    write_out(context, "no consumers recorded for " + key.str() + with_role + "\n");
    return k_exit_ok;
  }
  const std::map<std::string, std::string> names = product_names(*prepared.store, *hits);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"PROJECT", "TARGET", "ROLE", "BUILD", "HOST", "TIME", "PRODUCED"});
  if (transitive) {
    rows.back().insert(rows.back().begin(), "DEPTH");
  }
  for (const auto& hit : *hits) {
    const auto& event = hit.event;
    std::vector<std::string> row = {event.project,
                                    event.target + signature_mark(event),
                                    query::role_of(event),
                                    event.build,
                                    event.host,
                                    human_time(event.time),
                                    names.at(event.product)};
    if (transitive) {
      row.insert(row.begin(), std::string(static_cast<size_t>(hit.depth - 1) * 2, ' ') + std::to_string(hit.depth));
    }
    rows.push_back(std::move(row));
  }
  write_out(context, util::format_table(rows));
  return k_exit_ok;
}

} // namespace

extern const Command k_consumers_command{.name = "consumers",
                                         .synopsis = "[--json] [--transitive] [--role ROLE[,ROLE...]] "
                                                     "[--all-versions] FILE|DIGEST",
                                         .summary =
                                           "which builds consumed an artifact (and, transitively, their products)",
                                         .options = k_options,
                                         .run = run,
                                         .needs = Needs::artifact,
                                         .arity = k_one_artifact,
                                         .validate = validate};

} // namespace fingerprint::cmd
