#pragma once

// The producer -> consumer graph, between projects or between targets, as
// the graph command draws it and the HTML page lays it out.

#include <fingerprint/query/packages.hpp>
#include <fingerprint/store/store.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
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

// The node that stands, with --all, for every file no fingerprinted build
// produced or installed: compilers' and the system's headers and
// libraries, and sources.
inline constexpr std::string_view k_unproduced_node = "(no producer)";

struct Graph
{
  Edges edges;
  // The build index's events and the consumed events of the input
  // manifests its products name, for the page's tables
  // (GraphOptions::with_events).
  std::vector<store::Event> events;
  // Consumed files that no recorded build produced or installed: the edges
  // from k_unproduced_node (or from the Debian package that installed the
  // file, given a package index; only with GraphOptions::unproduced_edges),
  // and per consumer node the digests it read, each once, by number.
  Edges unproduced_edges;
  size_t unproduced_count = 0;                             // how many such files
  std::map<std::string, std::vector<uint32_t>> unproduced; // consumer node -> sorted numbers, < unproduced_count
  std::vector<std::string> unproduced_digests;             // with `with_events`: by number, "sha256:<hex>"
  // With `with_events`: the digests passed along each edge of `edges` and
  // of `unproduced_edges`, so that the page can name the artifacts behind
  // an edge, not only their file names (two versions share one).
  std::map<Edge, std::set<std::string>> digests;
};

struct GraphOptions
{
  bool per_target = false; // nodes "project/target" rather than projects
  // The events (and `digests`) the page's tables need; without it, `events`
  // holds the build index's events only, and manifests are read entry by
  // entry without making an event of each.
  bool with_events = true;
  // The edges from files no fingerprinted build made, with their names
  // (--all, the page): the largest part of a big store's graph, which the
  // plain graph only counts.
  bool unproduced_edges = true;
  // Given, a file a Debian package installed comes from that package's
  // node (package_node()) in `unproduced_edges`.
  const PackageIndex* packages = nullptr;
};

// The graph from the build index and the input manifests of its products:
// an edge for every consumed artifact whose producer (or, for an installed
// copy, whose origin's producer, else its installer) is recorded. The rest
// (toolchain and system files, sources) are kept apart: they would drown
// the picture. Unreadable lines and manifests are appended to `problems`.
Expected<Graph> collect_graph(const store::Store& store,
                              const GraphOptions& options,
                              std::vector<store::LogProblem>& problems);

// "libc6 2.36-9+deb12u7 (Debian)": the node of a package's files.
std::string package_node(const PackageOrigin& origin);

} // namespace fingerprint::query
