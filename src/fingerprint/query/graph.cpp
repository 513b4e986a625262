#include <fingerprint/query/graph.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/util/fs.hpp>

#include <iterator>
#include <unordered_map>

namespace fingerprint::query {

std::string
package_node(const PackageOrigin& origin)
{
  return origin.package + " " + origin.version + " (Debian)";
}

namespace {

// The last component, as std::filesystem::path::filename() gives it for an
// absolute file path, without making a path of it.
std::string_view
file_name(std::string_view path)
{
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

} // namespace

Expected<Graph>
collect_graph(const store::Store& store,
              bool per_target,
              std::vector<store::LogProblem>& problems,
              bool with_events,
              const PackageIndex* packages)
{
  Graph graph;
  auto ok = for_each_indexed_event(
    store, [&](store::Event& event) { graph.events.push_back(std::move(event)); }, problems);
  if (!ok) {
    return ok.error();
  }
  auto node = [&](const store::Event& event) {
    return per_target ? event.project + "/" + event.target : event.project;
  };
  // Producers and installs are in the build index itself; manifests hold
  // consumed edges only. Hashed: a store of a million artifacts looks up
  // a digest per input relation.
  std::unordered_map<std::string, std::string> producer_of;                       // digest -> node
  std::unordered_map<std::string, std::pair<std::string, std::string>> installed; // digest -> (from, installer node)
  std::unordered_map<std::string, std::string> package_of;                        // path -> its package's node
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::produced) {
      producer_of[event.digest] = node(event);
    } else if (event.event == store::EventKind::installed) {
      installed.try_emplace(event.digest, event.from, node(event));
    }
  }
  // The consumer node's edge from whoever made `digest`, read at `path`.
  auto add_edge = [&](const std::string& consumer, const std::string& digest, const std::string& path) {
    const std::string name = store::lossy_text(file_name(path));
    std::string producer;
    if (auto it = producer_of.find(digest); it != producer_of.end()) {
      producer = it->second;
    } else if (auto copy = installed.find(digest); copy != installed.end()) {
      // An installed copy leads to the build that made the file it was
      // installed from; a file installed from the source tree, to the
      // project that installed it.
      auto origin = producer_of.find(copy->second.first);
      producer = origin != producer_of.end() ? origin->second : copy->second.second;
    } else {
      graph.unproduced[consumer].insert(digest);
      std::string from(k_unproduced_node);
      if (packages != nullptr) {
        auto [known, added] = package_of.try_emplace(path);
        if (added) {
          auto origin = packages->owner(path);
          known->second = origin ? package_node(*origin) : from;
        }
        from = known->second;
      }
      graph.unproduced_edges[{from, consumer}].insert(name);
      if (with_events) {
        graph.digests[{from, consumer}].insert(digest);
      }
      return;
    }
    if (producer != consumer) {
      graph.edges[{producer, consumer}].insert(name);
      if (with_events) {
        graph.digests[{producer, consumer}].insert(digest);
      }
    }
  };
  // A manifest's edges are made one product at a time and, unless the
  // caller wants the events, taken from its entries without making an
  // event of each: a store of a million artifacts holds millions of them.
  ManifestInputs manifests(store);
  std::vector<store::Event> inputs;
  std::string digest;
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::consumed) {
      add_edge(node(event), event.digest, event.path);
    } else if (!event.inputs.empty() && with_events) {
      for (store::Event& input : manifests.of(event, problems)) {
        add_edge(node(input), input.digest, input.path);
        inputs.push_back(std::move(input));
      }
    } else if (!event.inputs.empty() && event.event == store::EventKind::produced) {
      const store::Manifest* manifest = manifests.manifest_of(event, problems);
      if (manifest == nullptr) {
        continue;
      }
      const std::string consumer = node(event);
      for (const store::ManifestEntry& entry : manifest->entries) {
        digest = store::DigestKey{manifest->algorithm, entry.hex}.str();
        add_edge(consumer, digest, entry.path);
      }
    }
  }
  graph.events.insert(
    graph.events.end(), std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end()));
  return graph;
}

} // namespace fingerprint::query
