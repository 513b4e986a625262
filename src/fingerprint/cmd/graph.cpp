#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/graph_html.hpp>
#include <fingerprint/query/graph.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/process.hpp>

#include <algorithm>
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

// Text for a Graphviz HTML-like label: the label is markup, so every name
// in it is escaped.
std::string
dot_html(std::string_view text)
{
  std::string escaped_text;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped_text += "&amp;";
        break;
      case '<':
        escaped_text += "&lt;";
        break;
      case '>':
        escaped_text += "&gt;";
        break;
      case '"':
        escaped_text += "&quot;";
        break;
      case '\n':
        escaped_text += ' ';
        break;
      default:
        escaped_text += c;
    }
  }
  // Graphviz reads HTML-like labels as UTF-8 and gives up on the whole
  // graph at a bad byte; the JSON dump swaps them for U+FFFD.
  return nlohmann::json::parse(
           nlohmann::json(escaped_text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
    .get<std::string>();
}

// An edge's label: the first few names, then how many more (an edge of a
// few hundred files is otherwise a wall of text); all of them are in its
// tooltip.
std::string
short_label(const std::set<std::string>& names)
{
  constexpr size_t k_named = 3;
  std::string text;
  size_t shown = 0;
  for (const auto& name : names) {
    if (shown == k_named) {
      return text + ", +" + std::to_string(names.size() - shown) + " more";
    }
    text += (text.empty() ? "" : ", ") + name;
    ++shown;
  }
  return text;
}

// What a drawing needs besides its edges. Nodes are coloured by project
// (`fill`), packages' and unknown origins' nodes grey and dashed, and each
// carries its newest version (`version`) under its name.
struct Drawing
{
  const Edges& edges;
  size_t hidden = 0;
  std::map<std::string, std::string> fill;    // node -> colour
  std::map<std::string, std::string> version; // node -> "1.4" (newest), "1.4 (+1 older)"
  std::set<std::string> origins;              // package and "(no producer)" nodes
  // For print (--format dot and svg): a title, a legend of the projects'
  // colours, every name of an edge in its tooltip, and a portrait
  // rank direction for a deep, narrow graph. The page has its own.
  std::string title;
  std::string subtitle;
  std::map<std::string, std::string> legend; // project -> colour
  std::string id_prefix;                     // the page holds two drawings: unique SVG ids
};

// The palette nodes are filled with, by project, in name order: light
// tints that black text reads on (ColorBrewer's Set3 and Pastel1, their
// grey left to packages).
constexpr std::string_view k_palette[] = {"#8dd3c7",
                                          "#fdb462",
                                          "#bebada",
                                          "#fb8072",
                                          "#80b1d3",
                                          "#b3de69",
                                          "#fccde5",
                                          "#ffffb3",
                                          "#bc80bd",
                                          "#ccebc5",
                                          "#ffed6f",
                                          "#decbe4"};
constexpr std::string_view k_origin_fill = "#eeeeee";

// Whether the graph is much deeper (its longest chain of builds) than it is
// wide (its most nodes at one depth), when a left-to-right drawing is a
// strip too wide to print. Depths are longest paths from the sources,
// capped at the number of nodes, so a cycle ends.
bool
deep_and_narrow(const Edges& edges)
{
  std::map<std::string, size_t> depth;
  for (const auto& [edge, names] : edges) {
    depth.try_emplace(edge.from, 0);
    depth.try_emplace(edge.to, 0);
  }
  for (size_t round = 0; round < depth.size(); ++round) {
    bool changed = false;
    for (const auto& [edge, names] : edges) {
      if (depth[edge.to] < depth[edge.from] + 1 && depth[edge.from] + 1 < depth.size()) {
        depth[edge.to] = depth[edge.from] + 1;
        changed = true;
      }
    }
    if (!changed) {
      break;
    }
  }
  std::map<size_t, size_t> width;
  size_t widest = 0;
  for (const auto& [node, d] : depth) {
    widest = std::max(widest, ++width[d]);
  }
  return width.size() > 2 * widest;
}

// The title, legend and note above the graph, as one HTML-like label, so
// they take no part in placing the nodes.
std::string
dot_heading(const Drawing& drawing)
{
  constexpr size_t k_legend_entries = 24;
  std::string label = "<<table border=\"0\" cellspacing=\"2\" cellpadding=\"2\">"
                      "<tr><td align=\"left\"><font point-size=\"18\"><b>"
                      + dot_html(drawing.title) + "</b></font></td></tr>";
  if (!drawing.subtitle.empty()) {
    label += "<tr><td align=\"left\"><font point-size=\"11\" color=\"#57606a\">" + dot_html(drawing.subtitle)
             + "</font></td></tr>";
  }
  if (!drawing.legend.empty()) {
    label += "<tr><td align=\"left\"><table border=\"0\" cellspacing=\"3\" cellpadding=\"3\"><tr>"
             "<td><font color=\"#57606a\">Legend:</font></td>";
    size_t shown = 0;
    for (const auto& [project, colour] : drawing.legend) {
      if (shown++ == k_legend_entries) {
        label += "<td>+" + std::to_string(drawing.legend.size() - k_legend_entries) + " more</td>";
        break;
      }
      label += "<td bgcolor=\"" + colour + "\" border=\"1\" color=\"#555555\"><font point-size=\"11\">"
               + dot_html(project) + "</font></td>";
    }
    if (!drawing.origins.empty()) {
      label += "<td bgcolor=\"" + std::string(k_origin_fill)
               + "\" border=\"1\" color=\"#888888\" style=\"dashed\">not built here: Debian package, or none</td>";
    }
    label += "</tr></table></td></tr>";
  }
  if (drawing.hidden > 0) {
    label += "<tr><td align=\"left\"><font point-size=\"10\" color=\"#57606a\">" + dot_html(hidden_note(drawing.hidden))
             + "</font></td></tr>";
  }
  return label + "</table>>";
}

// `hidden`: how many files were left out, in the graph's label (so that
// dot's SVG, and the page that inlines it, say so too).
std::string
dot_text(const Drawing& drawing)
{
  const bool print = !drawing.title.empty();
  std::string text = "digraph fingerprint {\n";
  text += std::string("  rankdir=") + (print && deep_and_narrow(drawing.edges) ? "TB" : "LR") + ";\n";
  // Helvetica for dot's text metrics, the generic family for whoever
  // renders the SVG without it.
  text += "  graph [fontname=\"Helvetica,Arial,sans-serif\" nodesep=0.3 ranksep=0.6 pad=0.2];\n"
          "  node [shape=box style=\"rounded,filled\" color=\"#555555\" fontname=\"Helvetica,Arial,sans-serif\" "
          "fontsize=12 margin=\"0.15,0.06\"];\n"
          "  edge [color=\"#57606a\" fontcolor=\"#444444\" fontname=\"Helvetica,Arial,sans-serif\" fontsize=9 "
          "arrowsize=0.7];\n";
  if (print) {
    text += "  labelloc=t;\n  labeljust=l;\n  label=" + dot_heading(drawing) + ";\n";
  } else if (drawing.hidden > 0) {
    text += "  labelloc=b;\n  label=" + dot_quoted(hidden_note(drawing.hidden)) + ";\n";
  }
  std::set<std::string> nodes;
  for (const auto& [edge, names] : drawing.edges) {
    nodes.insert(edge.from);
    nodes.insert(edge.to);
  }
  size_t n = 0;
  for (const auto& node : nodes) {
    std::string label = node;
    if (const auto version = drawing.version.find(node); version != drawing.version.end()) {
      label += "\n" + version->second;
    }
    const auto fill = drawing.fill.find(node);
    text += "  " + dot_quoted(node) + " [id=\"" + drawing.id_prefix + "n" + std::to_string(n++)
            + "\" label=" + dot_quoted(label) + " fillcolor=\""
            + std::string(fill != drawing.fill.end() ? std::string_view(fill->second) : k_origin_fill) + "\""
            + (drawing.origins.contains(node) ? " style=\"rounded,filled,dashed\" color=\"#888888\"" : "") + "];\n";
  }
  size_t e = 0;
  for (const auto& [edge, names] : drawing.edges) {
    text += "  " + dot_quoted(edge.from) + " -> " + dot_quoted(edge.to) + " [id=\"" + drawing.id_prefix + "e"
            + std::to_string(e++) + "\" label=" + dot_quoted(short_label(names));
    if (print) {
      text += " tooltip=" + dot_quoted(edge.from + " -> " + edge.to + ": " + joined(names));
    }
    if (drawing.origins.contains(edge.from)) {
      text += " style=dashed";
    }
    text += "];\n";
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
  const bool page_format = format == "html";
  std::vector<store::LogProblem> problems;
  // With --all, the files no fingerprinted build made come from their
  // Debian packages' nodes; the page always has them, behind a toggle.
  const std::optional<query::PackageIndex> packages = everything || page_format ? package_index() : std::nullopt;
  const query::GraphOptions graph_options{.per_target = per_target,
                                          .with_events = page_format,
                                          .unproduced_edges = everything || page_format,
                                          .packages = packages ? &*packages : nullptr};
  auto all = query::collect_graph(*prepared.store, graph_options, problems);
  report_problems(context, prepared.store->location(), problems);
  if (!all) {
    print_error(context, all.error().message);
    return k_exit_failure;
  }
  const auto project = args.value("project");
  auto in_project = [&](const std::string& node) {
    return !project || node == *project || node.starts_with(*project + "/");
  };
  auto kept = [&](const Edges& from) {
    Edges kept_edges;
    for (const auto& [edge, names] : from) {
      if (in_project(edge.from) || in_project(edge.to)) {
        kept_edges.emplace(edge, names);
      }
    }
    return kept_edges;
  };
  const Edges produced_edges = kept(all->edges);
  const Edges unproduced_edges = kept(all->unproduced_edges);
  Edges edges = produced_edges;
  if (everything) {
    edges.insert(unproduced_edges.begin(), unproduced_edges.end());
  }
  // The files left out, each once, of those the edges shown would pass.
  size_t hidden = 0;
  std::vector<bool> counted(all->unproduced_count);
  for (const auto& [consumer, ids] : all->unproduced) {
    if (in_project(consumer)) {
      for (const uint32_t id : ids) {
        if (!counted[id]) {
          counted[id] = true;
          ++hidden;
        }
      }
    }
  }

  // Colours by project, over the whole store so that they do not change
  // with --project; each node's newest version, by the time its build
  // recorded it.
  std::map<std::string, std::string> colour_of;                                  // project -> colour
  std::map<std::string, std::string> project_of;                                 // node -> project
  std::map<std::string, std::pair<std::string, std::set<std::string>>> versions; // node -> (newest time, versions)
  std::map<std::string, std::string> newest;                                     // node -> version
  for (const auto& event : all->events) {
    const std::string node = per_target ? event.project + "/" + event.target : event.project;
    colour_of.try_emplace(event.project);
    project_of.try_emplace(node, event.project);
    if (event.event == store::EventKind::produced && !event.version.empty()) {
      auto& [time, seen] = versions[node];
      seen.insert(event.version);
      if (event.time >= time) {
        time = event.time;
        newest[node] = event.version;
      }
    }
  }
  size_t next_colour = 0;
  for (auto& [name, colour] : colour_of) {
    colour = k_palette[next_colour++ % std::size(k_palette)];
  }
  auto drawing = [&](const Edges& drawn, size_t hidden_count) {
    Drawing d{drawn, hidden_count, {}, {}, {}, {}, {}, {}, {}};
    for (const auto& [edge, names] : drawn) {
      for (const std::string* node : {&edge.from, &edge.to}) {
        if (const auto it = project_of.find(*node); it != project_of.end()) {
          d.fill[*node] = colour_of[it->second];
          d.legend[it->second] = colour_of[it->second];
        } else {
          d.origins.insert(*node);
        }
        if (const auto it = newest.find(*node); it != newest.end()) {
          const size_t older = versions[*node].second.size() - 1;
          d.version[*node] = it->second + (older > 0 ? " (+" + std::to_string(older) + " older)" : "");
        }
      }
    }
    return d;
  };
  // The printed drawing's title: what, of which store, as of when. The
  // newest event's time rather than the clock's, so that the same store
  // always draws the same picture.
  std::string as_of;
  for (const auto& event : all->events) {
    as_of = std::max(as_of, event.time);
  }
  as_of = as_of.substr(0, 16);
  std::replace(as_of.begin(), as_of.end(), 'T', ' ');
  auto print_drawing = [&](const Edges& drawn, size_t hidden_count) {
    Drawing d = drawing(drawn, hidden_count);
    d.title = "Fingerprint build graph" + (project ? " of " + *project : std::string());
    d.subtitle = std::to_string(d.legend.size()) + (d.legend.size() == 1 ? " project, " : " projects, ")
                 + std::to_string(drawn.size()) + (drawn.size() == 1 ? " edge" : " edges") + " \u00b7 store "
                 + prepared.store->location() + (as_of.empty() ? "" : " \u00b7 as of " + as_of + " UTC");
    return d;
  };
  const size_t hidden_count = everything ? 0 : hidden;

  std::string text;
  if (format == "text") {
    for (const auto& [edge, names] : edges) {
      text += edge.from + " -> " + edge.to + "  (" + joined(names) + ")\n";
    }
    if (edges.empty()) {
      text = "no producer -> consumer edges recorded\n";
    }
    if (hidden_count > 0) {
      text += hidden_note(hidden_count) + "\n";
    }
  } else if (format == "dot") {
    text = dot_text(print_drawing(edges, hidden_count));
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
    if (hidden_count > 0) {
      text += "  %% " + hidden_note(hidden_count) + "\n";
    }
    for (const auto& [edge, names] : edges) {
      const std::string from = id(edge.from);
      const std::string to = id(edge.to);
      text += "  " + from + " -->|" + mermaid_quoted(joined(names)) + "| " + to + "\n";
    }
  } else if (format == "json") {
    text = dump_json(graph_json(edges, hidden_count));
  } else if (format == "svg") {
    if (!dot) {
      print_error(context, k_no_dot);
      return k_exit_failure;
    }
    auto svg = graphviz_svg(*dot, dot_text(print_drawing(edges, hidden_count)), context);
    if (!svg) {
      print_error(context, "graph: " + svg.error().message);
      return k_exit_failure;
    }
    text = std::move(*svg);
  } else {
    GraphPage page;
    page.store = prepared.store->location();
    page.project = project;
    page.per_target = per_target;
    page.show_toolchain = everything;
    page.colours = colour_of;
    // Every unproduced file: the page counts those its tables would show.
    page.hidden.insert(all->unproduced_digests.begin(), all->unproduced_digests.end());
    // Two drawings: the builds' own graph, and the same with the files of
    // the toolchain and the system from their packages' nodes, which the
    // page's toggle shows.
    Edges with_toolchain = produced_edges;
    with_toolchain.insert(unproduced_edges.begin(), unproduced_edges.end());
    using Kind = std::pair<const Edges*, std::string_view>;
    for (const auto& [drawn, prefix] : {Kind{&produced_edges, "g-"}, Kind{&with_toolchain, "t-"}}) {
      if (prefix == "t-" && unproduced_edges.empty()) {
        break;
      }
      GraphView view;
      view.graph = graph_json(*drawn, 0);
      for (auto& json_edge : view.graph["edges"]) {
        json_edge["artifacts"] = all->digests[{json_edge["from"], json_edge["to"]}];
      }
      Drawing d = drawing(*drawn, 0);
      d.id_prefix = std::string(prefix);
      view.versions = d.version;
      if (dot && page.layout_note.empty()) {
        if (auto svg = graphviz_svg(*dot, dot_text(d), context)) {
          view.svg = std::move(*svg);
        } else {
          // The tables are the larger part of the page; the page draws the graph itself.
          print_warning(context, "graph: " + svg.error().message);
          page.layout_note = "Laid out by this page: Graphviz's dot failed (" + svg.error().message + ").";
        }
      }
      if (prefix == "g-") {
        page.main = std::move(view);
      } else {
        page.toolchain = std::move(view);
      }
    }
    if (!dot) {
      page.layout_note =
        "Laid out by this page: Graphviz's dot was not found (apt-get install graphviz lays it out better).";
    } else if (!page.layout_note.empty()) {
      page.main.svg.reset();
      if (page.toolchain) {
        page.toolchain->svg.reset();
      }
    }
    for (const auto& event : all->events) {
      if (!project || event.project == *project) {
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
