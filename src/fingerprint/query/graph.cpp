#include <fingerprint/query/graph.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/util/fs.hpp>

namespace fingerprint::query {

Expected<Graph>
collect_graph(const store::Store& store, bool per_target, std::vector<store::LogProblem>& problems)
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
  std::map<std::string, std::string> producer_of; // digest -> node
  std::map<std::string, std::string> installed_from;
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::produced) {
      producer_of[event.digest] = node(event);
    } else if (event.event == store::EventKind::installed) {
      installed_from[event.digest] = event.from;
    }
  }
  for (const auto& event : graph.events) {
    if (event.event != store::EventKind::consumed) {
      continue;
    }
    std::string digest = event.digest;
    if (auto it = installed_from.find(digest); it != installed_from.end() && !producer_of.contains(digest)) {
      digest = it->second;
    }
    const auto producer = producer_of.find(digest);
    if (producer == producer_of.end()) {
      continue;
    }
    const std::string consumer = node(event);
    if (producer->second != consumer) {
      graph.edges[{producer->second, consumer}].insert(store::lossy_text(util::base_name(event.path)));
    }
  }
  return graph;
}

} // namespace fingerprint::query
