#pragma once

// The page `graph --format html` writes: the graph, and tables of the
// artifacts and of who produced and consumed them, with a search box.

#include <fingerprint/store/event.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fingerprint::cmd {

// What the page shows besides the build index's events.
struct GraphPage
{
  std::string store;
  std::optional<std::string> project; // --project: only its artifacts in the tables
  bool per_target = false;
  nlohmann::ordered_json graph;   // as --format json prints it: {"edges": [...], "nodes": [...]}
  std::optional<std::string> svg; // dot's; without it the page lays the graph out itself
  std::string layout_note;        // why it did
  // Digests of the files left out of the tables (no fingerprinted build
  // produced them; graph --all keeps them): the artifact table says how
  // many of those it would have shown.
  std::set<std::string> hidden;
  // The builds whose products the page shows, each with its provenance
  // (store/provenance.hpp; null when the store has none): the builds table.
  std::map<std::pair<std::string, std::string>, nlohmann::ordered_json> provenance;
};

// The page for `page`, its tables from `events` (the build index).
std::string graph_html(const GraphPage& page, const std::vector<store::Event>& events);

} // namespace fingerprint::cmd
