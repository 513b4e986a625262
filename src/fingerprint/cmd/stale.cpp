// stale: who must rebuild. The newest product of every target (per build
// tree and path) built on this host whose inputs, as its input manifest
// recorded them, are no longer the bytes at those paths now: an older
// version of a file, of a library another project rebuilt and reinstalled,
// of a package's header. Another host's paths name that host's files.

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/util/table.hpp>

#include <map>
#include <sys/stat.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "only the consumers of project P"},
  {"json", OptionKind::flag, {}, "print a JSON array"},
  {"algorithm", OptionKind::value, "A", "digest the files at the inputs' paths with A (default sha256)"},
};

// One input of a newest product that changed since.
struct Stale
{
  store::Event product; // its produced event
  store::Event input;   // the consumed edge: the recorded digest and path
  std::string now;      // the digest at the path now
};

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const std::string project = args.value("project").value_or("");
  std::vector<store::LogProblem> problems;
  std::map<std::string, store::Event> newest; // (project, target, build dir, path) -> its newest produced event
  std::vector<store::Event> old_edges;        // consumed events of stores older than input manifests
  const std::string host = hook::host_name();
  auto collected = query::for_each_indexed_event(
    *prepared.store,
    [&](store::Event& event) {
      if (event.host != host) {
        return;
      }
      if (event.event == store::EventKind::produced) {
        query::keep_newest(
          newest, event.project + '\0' + event.target + '\0' + event.build_dir + '\0' + event.path, event);
      } else if (event.event == store::EventKind::consumed) {
        old_edges.push_back(std::move(event));
      }
    },
    problems,
    project);
  if (!collected) {
    print_error(context, collected.error().message);
    return k_exit_failure;
  }
  if (!project.empty() && newest.empty()) {
    print_error(context,
                "stale: no build of project '" + project + "' on this host (" + host + ") is recorded in the store "
                  + prepared.store->location());
    return k_exit_failure;
  }

  // Each path digested once, as it is now (the digest cache spares the
  // files that did not change).
  digest::Hasher hasher(prepared.algorithm);
  const digest::DigestCache cache(digest::DigestCache::default_directory());
  std::map<std::string, std::optional<std::string>> now_at;
  auto current = [&](const std::string& path) -> const std::optional<std::string>& {
    auto [it, added] = now_at.try_emplace(path);
    if (added) {
      struct stat st
      {};
      // A file that is gone is not "an older version": nothing to compare.
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        if (auto digest = digest::digest_path(hasher, path, &cache)) {
          it->second = store::DigestKey{prepared.algorithm, digest->hex}.str();
        }
      }
    }
    return it->second;
  };

  query::ManifestInputs manifests(*prepared.store);
  std::vector<Stale> stale;
  size_t checked = 0;
  std::string recorded;                                // "<algorithm>:<hex>" of a manifest's entry
  std::vector<std::pair<size_t, std::string>> changed; // a manifest's changed entries: index, digest now
  for (const auto& [key, product] : newest) {
    // The manifest's entries as they are; an event is made only of those
    // that changed (a store of a million artifacts checks millions).
    changed.clear();
    if (const store::Manifest* manifest = manifests.manifest_of(product, problems)) {
      recorded = digest::algorithm_name(manifest->algorithm);
      recorded += ':';
      const size_t prefix = recorded.size();
      for (size_t i = 0; i < manifest->entries.size(); ++i) {
        ++checked;
        const auto& now = current(manifest->entries[i].path);
        recorded.resize(prefix);
        recorded += manifest->entries[i].hex;
        if (now && *now != recorded) {
          changed.emplace_back(i, *now);
        }
      }
    }
    if (!changed.empty()) {
      const std::vector<store::Event> inputs = manifests.of(product, problems); // one per entry, in order
      for (const auto& [i, now] : changed) {
        stale.push_back({product, inputs[i], now});
      }
    }
    for (const store::Event& edge : old_edges) {
      if (edge.product == product.digest && edge.build == product.build && edge.target == product.target) {
        ++checked;
        const auto& now = current(edge.path);
        if (now && *now != edge.digest) {
          stale.push_back({product, edge, *now});
        }
      }
    }
  }
  report_problems(context, prepared.store->location(), problems);

  if (args.flag("json")) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Stale& item : stale) {
      nlohmann::ordered_json row;
      row["project"] = item.product.project;
      row["version"] = item.product.version;
      row["target"] = item.product.target;
      row["build"] = item.product.build;
      row["build_dir"] = item.product.build_dir;
      row["product"] = item.product.digest;
      row["product_path"] = item.product.path;
      row["input"] = item.input.path;
      row["role"] = query::role_of(item.input);
      row["recorded"] = item.input.digest;
      row["now"] = item.now;
      out.push_back(std::move(row));
    }
    write_out(context, dump_json(out));
  } else if (stale.empty()) {
    write_out(context,
              "nothing stale: the newest product of each of " + std::to_string(newest.size())
                + " targets was made from the files at its inputs' paths now (" + std::to_string(checked)
                + " inputs)\n");
  } else {
    std::vector<std::vector<std::string>> rows{{"PROJECT", "TARGET", "BUILD", "INPUT", "ROLE", "RECORDED", "NOW"}};
    for (const Stale& item : stale) {
      rows.push_back({item.product.project,
                      item.product.target,
                      item.product.build,
                      display_path(item.input.path),
                      query::role_of(item.input),
                      item.input.digest.substr(0, 19),
                      item.now.substr(0, 19)});
    }
    write_out(context,
              std::to_string(stale.size()) + " input(s) changed since the newest build that read them; rebuild:\n"
                + util::format_table(rows, 2));
  }
  return stale.empty() ? k_exit_ok : k_exit_failure;
}

} // namespace

extern const Command k_stale_command{
  .name = "stale",
  .synopsis = "[--project P] [--json]",
  .summary = "who must rebuild: this host's newest products whose inputs are no longer the bytes at their paths "
             "(exit 1 if any)",
  .options = k_options,
  .run = run,
  .needs = Needs::store,
  .arity = {0, 0, "takes no arguments"}};

} // namespace fingerprint::cmd
