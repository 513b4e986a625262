#include <fingerprint/query/graph.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/util/fs.hpp>

#include <iterator>

namespace fingerprint::query {

std::string
package_node(const PackageOrigin& origin)
{
  return origin.package + " " + origin.version + " (Debian)";
}

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
  // consumed edges only.
  std::map<std::string, std::string> producer_of;                       // digest -> node
  std::map<std::string, std::pair<std::string, std::string>> installed; // digest -> (from, installer node)
  std::map<std::string, std::string> package_of;                        // path -> its package's node
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::produced) {
      producer_of[event.digest] = node(event);
    } else if (event.event == store::EventKind::installed) {
      installed.try_emplace(event.digest, event.from, node(event));
    }
  }
  auto add_edge = [&](const store::Event& event) {
    const std::string consumer = node(event);
    const std::string name = store::lossy_text(util::base_name(event.path));
    std::string producer;
    if (auto it = producer_of.find(event.digest); it != producer_of.end()) {
      producer = it->second;
    } else if (auto copy = installed.find(event.digest); copy != installed.end()) {
      // An installed copy leads to the build that made the file it was
      // installed from; a file installed from the source tree, to the
      // project that installed it.
      auto origin = producer_of.find(copy->second.first);
      producer = origin != producer_of.end() ? origin->second : copy->second.second;
    } else {
      graph.unproduced[consumer].insert(event.digest);
      std::string from(k_unproduced_node);
      if (packages != nullptr) {
        auto [known, added] = package_of.try_emplace(event.path);
        if (added) {
          auto origin = packages->owner(event.path);
          known->second = origin ? package_node(*origin) : from;
        }
        from = known->second;
      }
      graph.unproduced_edges[{from, consumer}].insert(name);
      if (with_events) {
        graph.digests[{from, consumer}].insert(event.digest);
      }
      return;
    }
    if (producer != consumer) {
      graph.edges[{producer, consumer}].insert(name);
      if (with_events) {
        graph.digests[{producer, consumer}].insert(event.digest);
      }
    }
  };
  // A manifest's edges are made one product at a time and, unless the
  // caller wants the events, dropped again: a store of a million input
  // relations holds a million of them.
  ManifestInputs manifests(store);
  std::vector<store::Event> inputs;
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::consumed) {
      add_edge(event);
    } else if (!event.inputs.empty()) {
      for (store::Event& input : manifests.of(event, problems)) {
        add_edge(input);
        if (with_events) {
          inputs.push_back(std::move(input));
        }
      }
    }
  }
  graph.events.insert(
    graph.events.end(), std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end()));
  return graph;
}

} // namespace fingerprint::query
