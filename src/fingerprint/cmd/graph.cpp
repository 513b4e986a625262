#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/record.hpp>

#include <filesystem>
#include <map>
#include <set>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"format", OptionKind::value, "F", "text (default), dot, mermaid or json"},
  {"project", OptionKind::value, "P", "only edges into or out of project P"},
  {"artifacts", OptionKind::flag, {}, "one node per target rather than per project"},
};

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

// The producer -> consumer graph from the build index: an edge for every
// consumed artifact whose producer (or, for an installed copy, whose
// origin's producer) is recorded. Artifacts of unknown origin (system
// libraries) are left out: they would drown the picture.
Expected<std::map<Edge, std::set<std::string>>>
collect(const store::DirectoryStore& store, bool per_target, Context& context)
{
  std::vector<store::Event> consumed;
  std::map<std::string, std::string> producer_of; // digest -> node
  auto node = [&](const store::Event& event) {
    return per_target ? event.project + "/" + event.target : event.project;
  };
  std::map<std::string, std::string> installed_from;
  std::vector<store::LogProblem> problems;
  auto ok = store::for_each_indexed_event(
    store,
    [&](store::Event& event) {
      switch (event.event) {
        case store::EventKind::produced:
          producer_of[event.digest] = node(event);
          break;
        case store::EventKind::installed:
          installed_from[event.digest] = event.from;
          break;
        case store::EventKind::consumed:
          consumed.push_back(std::move(event));
          break;
      }
    },
    problems);
  report_problems(context, store.root(), problems);
  if (!ok) {
    return ok.error();
  }
  std::map<Edge, std::set<std::string>> edges;
  for (const auto& event : consumed) {
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
      edges[{producer->second, consumer}].insert(base_name(event.path));
    }
  }
  return edges;
}

std::string
joined(const std::set<std::string>& names)
{
  std::string text;
  for (const auto& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

std::string
quoted(const std::string& text)
{
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int
run(const Args& args, Context& context)
{
  const std::string format = args.value("format").value_or("text");
  if (format != "text" && format != "dot" && format != "mermaid" && format != "json") {
    print_error(context, "graph: --format: '" + format + "' is not one of text, dot, mermaid, json");
    return k_exit_usage;
  }
  int status = k_exit_ok;
  auto store = open_store_for_reading(args, context, status);
  if (!store) {
    return status;
  }
  const bool per_target = args.flag("artifacts");
  auto all = collect(*store, per_target, context);
  if (!all) {
    print_error(context, all.error().message);
    return k_exit_failure;
  }
  const auto project = args.value("project");
  auto in_project = [&](const std::string& node) {
    return !project || node == *project || node.starts_with(*project + "/");
  };
  std::map<Edge, std::set<std::string>> edges;
  for (auto& [edge, names] : *all) {
    if (in_project(edge.from) || in_project(edge.to)) {
      edges.emplace(edge, std::move(names));
    }
  }

  std::string text;
  if (format == "text") {
    for (const auto& [edge, names] : edges) {
      text += edge.from + " -> " + edge.to + "  (" + joined(names) + ")\n";
    }
    if (edges.empty()) {
      text = "no producer -> consumer edges recorded\n";
    }
  } else if (format == "dot") {
    text = "digraph fingerprint {\n  rankdir=LR;\n  node [shape=box];\n";
    for (const auto& [edge, names] : edges) {
      text += "  " + quoted(edge.from) + " -> " + quoted(edge.to) + " [label=" + quoted(joined(names)) + "];\n";
    }
    text += "}\n";
  } else if (format == "mermaid") {
    std::map<std::string, std::string> ids;
    auto id = [&](const std::string& node) {
      auto [it, inserted] = ids.try_emplace(node, "n" + std::to_string(ids.size()));
      if (inserted) {
        text += "  " + it->second + "[" + quoted(node) + "]\n";
      }
      return it->second;
    };
    text = "graph LR\n";
    for (const auto& [edge, names] : edges) {
      const std::string from = id(edge.from);
      const std::string to = id(edge.to);
      text += "  " + from + " -->|" + quoted(joined(names)) + "| " + to + "\n";
    }
  } else {
    nlohmann::ordered_json json;
    std::set<std::string> nodes;
    json["edges"] = nlohmann::ordered_json::array();
    for (const auto& [edge, names] : edges) {
      nodes.insert(edge.from);
      nodes.insert(edge.to);
      json["edges"].push_back({{"from", edge.from}, {"to", edge.to}, {"artifacts", names}});
    }
    json["nodes"] = nodes;
    text = dump_json(json);
  }
  write_out(context, text);
  return k_exit_ok;
}

} // namespace

const Command&
graph_command()
{
  static const Command k_command{"graph",
                                 "[--format text|dot|mermaid|json] [--project P] [--artifacts]",
                                 "the producer -> consumer graph between projects (or targets)",
                                 k_options,
                                 run};
  return k_command;
}

} // namespace fingerprint::cmd
