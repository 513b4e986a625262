#pragma once

// The producer -> consumer graph, between projects or between targets, as
// the graph command draws it and the HTML page lays it out.

#include <fingerprint/store/store.hpp>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace fingerprint::query {

struct Edge
{
  std::string from; // producer node
  std::string to;   // consumer node

  bool
  operator<(const Edge& other) const
  {
    return std::tie(from, to) < std::tie(other.from, other.to);
  }
};

// Each edge with the names of the artifacts passed along it.
using Edges = std::map<Edge, std::set<std::string>>;

struct Graph
{
  Edges edges;
  std::vector<store::Event> events; // the whole build index, for the page's tables
};

// The graph from the build index: an edge for every consumed artifact whose
// producer (or, for an installed copy, whose origin's producer) is
// recorded. Artifacts of unknown origin (system libraries) are left out:
// they would drown the picture. Nodes are projects, or "project/target"
// with `per_target`. Unreadable lines are appended to `problems`.
Expected<Graph> collect_graph(const store::Store& store, bool per_target, std::vector<store::LogProblem>& problems);

} // namespace fingerprint::query
