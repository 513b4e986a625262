#pragma once

// The page `graph --format html` writes: the graph coloured by project, a
// panel for every artifact and build, sortable tables of builds, artifacts,
// producers and consumers, and a search that marks what matches.

#include <fingerprint/store/event.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fingerprint::cmd {

// One drawing of the graph: the builds' own, or with the toolchain's and
// the system's files from their Debian packages' nodes.
struct GraphView
{
  // {"edges": [{"from", "to", "artifacts": [digest...]}], "nodes": [...]}
  nlohmann::ordered_json graph;
  std::map<std::string, std::string> versions; // node -> its newest version, as drawn under its name
  std::optional<std::string> svg;              // dot's; without it the page lays the graph out itself
};

// What the page shows besides the build index's events.
struct GraphPage
{
  std::string store;
  std::optional<std::string> project; // --project: only its artifacts in the tables
  bool per_target = false;
  bool show_toolchain = false; // --all: the toolchain's files shown from the start
  GraphView main;
  std::optional<GraphView> toolchain; // none when every file read was a fingerprinted build's
  std::string layout_note;            // why the page lays the graph out itself
  // Digests of the files no fingerprinted build produced (toolchain and
  // system files, sources): hidden until the page's toggle shows them.
  std::set<std::string> hidden;
  std::map<std::string, std::string> colours; // project -> its nodes' fill
  // The builds whose events the page shows, each with its provenance
  // (store/provenance.hpp; null when the store has none).
  std::map<std::pair<std::string, std::string>, nlohmann::ordered_json> provenance;
};

// The page for `page`, its tables from `events` (the build index).
std::string graph_html(const GraphPage& page, const std::vector<store::Event>& events);

} // namespace fingerprint::cmd
