#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/table.hpp>

#include <map>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print a JSON array of consumer events"},
  {"transitive", OptionKind::flag, {}, "also who consumed the consumers' products (with their depth)"},
  {"algorithm", OptionKind::value, "A", "digest a FILE argument with A (default sha256)"},
};

// The name a product was produced under, for people; its digest otherwise.
std::string
product_name(const store::Store& store, const std::string& product, std::map<std::string, std::string>& memo)
{
  if (auto it = memo.find(product); it != memo.end()) {
    return it->second;
  }
  std::string name = product;
  if (auto key = store::parse_digest_key(product)) {
    if (auto record = store::load_record(store, *key); record && !record->producers.empty()) {
      name = display_path(record->producers.front().path);
    }
  }
  memo.emplace(product, name);
  return name;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  // Problems in the artifact's own log are met again, and reported, below.
  const store::DigestKey& key = prepared.artifact->key;
  const bool transitive = args.flag("transitive");
  std::vector<store::LogProblem> problems;
  auto hits = prepared.store->find_consumers(key, transitive, problems);
  if (!hits) {
    print_error(context, hits.error().message);
    return k_exit_failure;
  }
  report_problems(context, prepared.store->location(), problems);

  if (args.flag("json")) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& hit : *hits) {
      auto object = event_json(hit.event);
      if (transitive) {
        object["depth"] = hit.depth;
      }
      array.push_back(std::move(object));
    }
    write_out(context, dump_json(array));
    return k_exit_ok;
  }
  if (hits->empty()) {
    write_out(context, "no consumers recorded for " + key.str() + "\n");
    return k_exit_ok;
  }
  std::map<std::string, std::string> names;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"PROJECT", "TARGET", "BUILD", "HOST", "TIME", "PRODUCED"});
  if (transitive) {
    rows.back().insert(rows.back().begin(), "DEPTH");
  }
  for (const auto& hit : *hits) {
    const auto& event = hit.event;
    std::vector<std::string> row = {event.project,
                                    event.target,
                                    event.build,
                                    event.host,
                                    human_time(event.time),
                                    product_name(*prepared.store, event.product, names)};
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
                                         .synopsis = "[--json] [--transitive] FILE|DIGEST",
                                         .summary =
                                           "which builds consumed an artifact (and, transitively, their products)",
                                         .options = k_options,
                                         .run = run,
                                         .needs = Needs::artifact,
                                         .arity = k_one_artifact};

} // namespace fingerprint::cmd
