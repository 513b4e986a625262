#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/graph_html.hpp>
#include <fingerprint/query/graph.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/process.hpp>

#include <cerrno>
#include <fcntl.h>
#include <map>
#include <optional>
#include <set>
#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"format", OptionKind::value, "F", "text (default), dot, mermaid, json, svg (needs Graphviz's dot) or html"},
  {"project", OptionKind::value, "P", "only edges into or out of project P"},
  {"artifacts", OptionKind::flag, {}, "one node per target rather than per project"},
  {"all", OptionKind::flag, {}, "also files no fingerprinted build produced (toolchain, system and source files)"},
  {"output", OptionKind::value, "FILE", "write to FILE rather than to standard output"},
};

constexpr std::string_view k_no_dot = "graph: --format svg needs Graphviz's dot (apt-get install graphviz)";

using query::Edges;

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

// Mermaid's quoted text knows no backslash escapes, only entity codes
// (#quot; and #35; for the # that starts them); a line break would end the
// statement.
std::string
mermaid_quoted(const std::string& text)
{
  std::string quoted_text = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        quoted_text += "#quot;";
        break;
      case '#':
        quoted_text += "#35;";
        break;
      case '\n':
      case '\r':
        quoted_text += ' ';
        break;
      default:
        quoted_text += c;
    }
  }
  return quoted_text + "\"";
}

// Graphviz's scanner refuses a quoted string longer than 16384 bytes (the
// label of an edge that passes a few hundred artifacts is longer) but joins
// "a" + "b": long text goes in pieces, cut between UTF-8 characters, each
// short enough even when every byte becomes a six-byte \u escape.
std::string
dot_quoted(const std::string& text)
{
  constexpr size_t k_piece = 2048;
  std::string pieces;
  size_t start = 0;
  do {
    size_t end = std::min(start + k_piece, text.size());
    while (end < text.size() && end > start + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      --end;
    }
    pieces += (start == 0 ? "" : " + ") + quoted(text.substr(start, end - start));
    start = end;
  } while (start < text.size());
  return pieces;
}

// What every format says when files were left out.
std::string
hidden_note(size_t hidden)
{
  return std::to_string(hidden) + (hidden == 1 ? " toolchain/system file" : " toolchain/system files")
         + " hidden (no fingerprinted build produced them; --all shows them)";
}

// `hidden`: how many files were left out, in the graph's label (so that
// dot's SVG, and the page that inlines it, say so too).
std::string
dot_text(const Edges& edges, size_t hidden)
{
  std::string text = "digraph fingerprint {\n  rankdir=LR;\n  node [shape=box];\n";
  if (hidden > 0) {
    text += "  labelloc=b;\n  label=" + dot_quoted(hidden_note(hidden)) + ";\n";
  }
  for (const auto& [edge, names] : edges) {
    text +=
      "  " + dot_quoted(edge.from) + " -> " + dot_quoted(edge.to) + " [label=" + dot_quoted(joined(names)) + "];\n";
  }
  return text + "}\n";
}

nlohmann::ordered_json
graph_json(const Edges& edges, size_t hidden)
{
  nlohmann::ordered_json json;
  std::set<std::string> nodes;
  json["edges"] = nlohmann::ordered_json::array();
  for (const auto& [edge, names] : edges) {
    nodes.insert(edge.from);
    nodes.insert(edge.to);
    json["edges"].push_back({{"from", edge.from}, {"to", edge.to}, {"artifacts", names}});
  }
  json["nodes"] = nodes;
  json["hidden_files"] = hidden;
  return json;
}

// ---- Graphviz, through a pipe ------------------------------------------

std::string
trimmed(std::string text)
{
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  return text;
}

// The DOT laid out by Graphviz's `dot` as an SVG document.
Expected<std::string>
graphviz_svg(const std::string& dot, const std::string& dot_input, Context& context)
{
  auto finished = util::run_captured({dot, "-Tsvg"}, dot_input);
  if (!finished) {
    return finished.error();
  }
  const std::string errors = trimmed(std::move(finished->err));
  if (finished->status != 0) {
    return Error{dot + " -Tsvg failed (exit status " + std::to_string(finished->status)
                 + "): " + (errors.empty() ? "no message" : errors)};
  }
  if (!errors.empty()) {
    print_warning(context, "dot: " + errors);
  }
  return std::move(finished->out);
}

// ---- The command ---------------------------------------------------------

Expected<void>
write_file(const std::string& path, std::string_view text)
{
  util::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (!fd) {
    return make_error(path, util::errno_text(errno));
  }
  if (auto written = util::write_all(fd.get(), text); !written) {
    return make_error(path, written.error().message);
  }
  if (::close(fd.release()) != 0) {
    return make_error(path, util::errno_text(errno));
  }
  return {};
}

int
validate(const Args& args, Context& context)
{
  const std::string format = args.value("format").value_or("text");
  const std::set<std::string> formats = {"text", "dot", "mermaid", "json", "svg", "html"};
  if (!formats.contains(format)) {
    print_error(context, "graph: --format: '" + format + "' is not one of text, dot, mermaid, json, svg, html");
    return k_exit_usage;
  }
  // Before opening the store, which may be large: without Graphviz an SVG
  // cannot be made at all, while the page lays the graph out itself.
  if (format == "svg" && !util::find_program("dot")) {
    print_error(context, k_no_dot);
    return k_exit_failure;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const std::string format = args.value("format").value_or("text");
  std::optional<std::string> dot;
  if (format == "svg" || format == "html") {
    dot = util::find_program("dot");
  }
  const bool per_target = args.flag("artifacts");
  const bool everything = args.flag("all");
  std::vector<store::LogProblem> problems;
  // With --all, the files no fingerprinted build made come from their
  // Debian packages' nodes.
  const std::optional<query::PackageIndex> packages = everything ? package_index() : std::nullopt;
  auto all =
    query::collect_graph(*prepared.store, per_target, problems, format == "html", packages ? &*packages : nullptr);
  report_problems(context, prepared.store->location(), problems);
  if (!all) {
    print_error(context, all.error().message);
    return k_exit_failure;
  }
  const auto project = args.value("project");
  auto in_project = [&](const std::string& node) {
    return !project || node == *project || node.starts_with(*project + "/");
  };
  if (everything) {
    all->edges.merge(all->unproduced_edges);
  }
  Edges edges;
  for (auto& [edge, names] : all->edges) {
    if (in_project(edge.from) || in_project(edge.to)) {
      edges.emplace(edge, std::move(names));
    }
  }
  // The files left out, each once, of those the edges shown would pass.
  std::set<std::string> hidden;
  if (!everything) {
    for (const auto& [consumer, digests] : all->unproduced) {
      if (in_project(consumer)) {
        hidden.insert(digests.begin(), digests.end());
      }
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
    if (!hidden.empty()) {
      text += hidden_note(hidden.size()) + "\n";
    }
  } else if (format == "dot") {
    text = dot_text(edges, hidden.size());
  } else if (format == "mermaid") {
    std::map<std::string, std::string> ids;
    auto id = [&](const std::string& node) {
      auto [it, inserted] = ids.try_emplace(node, "n" + std::to_string(ids.size()));
      if (inserted) {
        text += "  " + it->second + "[" + mermaid_quoted(node) + "]\n";
      }
      return it->second;
    };
    text = "graph LR\n";
    if (!hidden.empty()) {
      text += "  %% " + hidden_note(hidden.size()) + "\n";
    }
    for (const auto& [edge, names] : edges) {
      const std::string from = id(edge.from);
      const std::string to = id(edge.to);
      text += "  " + from + " -->|" + mermaid_quoted(joined(names)) + "| " + to + "\n";
    }
  } else if (format == "json") {
    text = dump_json(graph_json(edges, hidden.size()));
  } else if (format == "svg") {
    if (!dot) {
      print_error(context, k_no_dot);
      return k_exit_failure;
    }
    auto svg = graphviz_svg(*dot, dot_text(edges, hidden.size()), context);
    if (!svg) {
      print_error(context, "graph: " + svg.error().message);
      return k_exit_failure;
    }
    text = std::move(*svg);
  } else {
    GraphPage page{
      prepared.store->location(), project, per_target, graph_json(edges, hidden.size()), std::nullopt, {}, {}, {}};
    if (!everything) {
      // Every unproduced file: the page counts those its tables would show.
      for (auto& [consumer, digests] : all->unproduced) {
        page.hidden.merge(digests);
      }
    }
    if (dot) {
      auto svg = graphviz_svg(*dot, dot_text(edges, hidden.size()), context);
      if (svg) {
        page.svg = std::move(*svg);
      } else {
        // The tables are the larger part of the page; the page draws the graph itself.
        print_warning(context, "graph: " + svg.error().message);
        page.layout_note = "Laid out by this page: Graphviz's dot failed (" + svg.error().message + ").";
      }
    } else {
      page.layout_note =
        "Laid out by this page: Graphviz's dot was not found (apt-get install graphviz lays it out better).";
    }
    for (const auto& event : all->events) {
      if (event.event == store::EventKind::produced && (!project || event.project == *project)) {
        if (auto [it, added] = page.provenance.try_emplace({event.project, event.build}); added) {
          if (auto document = build_provenance(*prepared.store, {event.project, event.build}, context)) {
            it->second = std::move(*document);
          }
        }
      }
    }
    text = graph_html(page, all->events);
  }
  if (const auto output = args.value("output")) {
    if (auto written = write_file(*output, text); !written) {
      print_error(context, "graph: --output: " + written.error().message);
      return k_exit_failure;
    }
    return k_exit_ok;
  }
  write_out(context, text);
  return k_exit_ok;
}

} // namespace

extern const Command k_graph_command{
  .name = "graph",
  .synopsis = "[--format text|dot|mermaid|json|svg|html] [--project P] [--artifacts] [--all] [--output FILE]",
  .summary = "the producer -> consumer graph between projects (or targets)",
  .options = k_options,
  .run = run,
  .needs = Needs::store,
  .validate = validate};

} // namespace fingerprint::cmd
