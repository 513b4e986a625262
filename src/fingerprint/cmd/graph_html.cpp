#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/graph_html.hpp>

#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace fingerprint::cmd {

namespace {

// Text for HTML content and quoted attribute values. Bytes that are not
// UTF-8 are left to the browser, whose decoder turns them into U+FFFD without
// ever swallowing the ASCII that follows, so they cannot undo the escaping.
std::string
html(std::string_view text)
{
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&#39;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// JSON to sit inside a <script> element: all ASCII (so U+2028/2029 and
// other line breaks JavaScript might care about are \u escapes), and with
// <, > and & escaped too, so neither "</script>" nor "<!--" can occur in it.
std::string
script_json(const nlohmann::ordered_json& value)
{
  const std::string text = value.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '<':
        escaped += "\\u003c";
        break;
      case '>':
        escaped += "\\u003e";
        break;
      case '&':
        escaped += "\\u0026";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// dot's SVG made fit to sit inside HTML: no XML declaration, doctype or
// comments, and no namespace declarations (the HTML parser supplies them),
// so the page names no URL at all.
std::string
inline_svg(const std::string& svg)
{
  std::string text = svg.substr(std::min(svg.find("<svg"), svg.size()));
  for (const std::string_view attribute :
       {" xmlns=\"http://www.w3.org/2000/svg\"", " xmlns:xlink=\"http://www.w3.org/1999/xlink\""}) {
    if (const size_t at = text.find(attribute); at != std::string::npos) {
      text.erase(at, attribute.size());
    }
  }
  for (size_t start = text.find("<!--"); start != std::string::npos; start = text.find("<!--", start)) {
    const size_t end = text.find("-->", start);
    text.erase(start, end == std::string::npos ? std::string::npos : end + 3 - start);
  }
  return text;
}

std::string
listed(const std::set<std::string>& names)
{
  std::string text;
  for (const auto& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

std::string
human_size(uint64_t bytes)
{
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double size = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (size >= 1024 && unit + 1 < std::size(units)) {
    size /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", size, units[unit]);
  return text;
}

// With --project, the page keeps the artifacts that project produced or
// consumed (and what they were installed from), with every event about
// them: who else made or read them is the point of the page.
std::vector<const store::Event*>
page_events(const std::vector<store::Event>& events, const std::optional<std::string>& project)
{
  std::set<std::string> digests;
  for (const auto& event : events) {
    if (!project || event.project == *project) {
      digests.insert(event.digest);
    }
  }
  for (const auto& event : events) {
    if (event.event == store::EventKind::installed && digests.contains(event.digest)) {
      digests.insert(event.from);
    }
  }
  std::vector<const store::Event*> kept;
  for (const auto& event : events) {
    if (digests.contains(event.digest)) {
      kept.push_back(&event);
    }
  }
  return kept;
}

constexpr std::string_view k_style = R"css(
body { font: 14px/1.45 system-ui, sans-serif; color: #1b1f24; margin: 0 auto; max-width: 1200px; padding: 0 1rem 2rem; }
header { position: sticky; top: 0; background: #fff; padding: .75rem 0; border-bottom: 1px solid #d0d7de; z-index: 1; }
h1 { font-size: 1.3rem; margin: 0 0 .25rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
.meta, .note, #count { color: #57606a; }
#q { font: inherit; width: min(32rem, 100%); padding: .35rem .5rem; margin-right: .5rem; }
#graph { overflow: auto; border: 1px solid #d0d7de; margin-top: 1rem; padding: .5rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #d0d7de; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; white-space: nowrap; }
code { font: 12px ui-monospace, monospace; }
td.digest code { display: inline-block; max-width: 16ch; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; vertical-align: bottom; }
g.node { cursor: pointer; }
g.dim { opacity: .2; }
#layout rect { fill: #f6f8fa; stroke: #0969da; }
#layout text { fill: #1b1f24; font: 13px system-ui, sans-serif; }
#layout path { fill: none; stroke: #57606a; }
#layout marker path { fill: #57606a; stroke: none; }
)css";

// The page's behaviour: the search box (also set by a #q=TEXT fragment),
// which hides table rows and dims graph nodes that do not match every word;
// a click on a node searches for it; and, without Graphviz, a layered
// layout of its own. It sets data-ready on <body> when done, which a test
// reading the rendered DOM waits for.
constexpr std::string_view k_script = R"js(
(function () {
  "use strict";
  var q = document.getElementById("q");
  var count = document.getElementById("count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tbody tr"));
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var layout = document.getElementById("layout");
  if (layout) {
    draw(layout, data);
  }
  var nodes = Array.prototype.slice.call(document.querySelectorAll("#graph g.node"));

  function title(g) {
    var t = g.querySelector("title");
    return t ? t.textContent : "";
  }
  function filter() {
    var words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    function matches(text) {
      text = text.toLowerCase();
      return words.every(function (word) { return text.indexOf(word) >= 0; });
    }
    var shown = 0;
    rows.forEach(function (row) {
      row.hidden = !matches(row.textContent);
      shown += row.hidden ? 0 : 1;
    });
    nodes.forEach(function (g) { g.classList.toggle("dim", words.length > 0 && !matches(title(g))); });
    count.textContent = words.length ? shown + " of " + rows.length + " rows" : rows.length + " rows";
  }

  // Longest-path layers from the sources, one column each; the rank is
  // capped at the number of nodes, so a cycle ends.
  function draw(svg, graph) {
    function make(name, attributes, parent) {
      var element = document.createElementNS(svg.namespaceURI, name);
      Object.keys(attributes).forEach(function (key) { element.setAttribute(key, attributes[key]); });
      parent.appendChild(element);
      return element;
    }
    var rank = {};
    graph.nodes.forEach(function (node) { rank[node] = 0; });
    for (var round = 0; round < graph.nodes.length; round++) {
      var changed = false;
      graph.edges.forEach(function (edge) {
        if (rank[edge.to] < rank[edge.from] + 1 && rank[edge.from] + 1 < graph.nodes.length) {
          rank[edge.to] = rank[edge.from] + 1;
          changed = true;
        }
      });
      if (!changed) {
        break;
      }
    }
    var columns = [];
    graph.nodes.forEach(function (node) { (columns[rank[node]] = columns[rank[node]] || []).push(node); });
    var boxes = {}, x = 10, bottom = 10, height = 28;
    columns.forEach(function (column) {
      var width = 24 + 7.5 * Math.max.apply(null, column.map(function (node) { return node.length; }));
      column.forEach(function (node, i) {
        boxes[node] = {x: x, y: 10 + i * (height + 16), w: width};
        bottom = Math.max(bottom, boxes[node].y + height + 10);
      });
      x += width + 60;
    });
    var marker = make("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
                                 markerWidth: 8, markerHeight: 8, orient: "auto"}, make("defs", {}, svg));
    make("path", {d: "M0,0 L10,5 L0,10 z"}, marker);
    graph.edges.forEach(function (edge) {
      var a = boxes[edge.from], b = boxes[edge.to];
      var x1 = a.x + a.w, y1 = a.y + height / 2, x2 = b.x, y2 = b.y + height / 2;
      // An edge that skips a column (or goes back) bows below the boxes it would cross.
      var bend = rank[edge.to] - rank[edge.from] === 1 ? 0 : 48;
      bottom = Math.max(bottom, Math.max(y1, y2) + bend);
      var g = make("g", {"class": "edge"}, svg);
      make("title", {}, g).textContent = edge.from + " -> " + edge.to + ": " + edge.artifacts.join(", ");
      make("path", {d: "M" + x1 + "," + y1 + " C" + (x1 + 40) + "," + (y1 + bend) + " " + (x2 - 40) + "," + (y2 + bend) + " " + x2 + "," + y2,
                    "marker-end": "url(#arrow)"}, g);
    });
    graph.nodes.forEach(function (node) {
      var box = boxes[node];
      var g = make("g", {"class": "node"}, svg);
      make("title", {}, g).textContent = node;
      make("rect", {x: box.x, y: box.y, width: box.w, height: height, rx: 4}, g);
      make("text", {x: box.x + 12, y: box.y + 18}, g).textContent = node;
    });
    svg.setAttribute("width", x);
    svg.setAttribute("height", bottom);
  }

  q.addEventListener("input", filter);
  nodes.forEach(function (g) {
    g.addEventListener("click", function () { q.value = title(g); filter(); });
  });
  var fragment = /^#q=(.*)$/.exec(location.hash);
  if (fragment) {
    try {
      q.value = decodeURIComponent(fragment[1]);
    } catch (e) {
      q.value = fragment[1];
    }
  }
  filter();
  document.body.dataset.ready = "1";
})();
)js";

std::string
td(std::string_view text, std::string_view css_class = {})
{
  return (css_class.empty() ? "<td>" : "<td class=\"" + std::string(css_class) + "\">") + html(text) + "</td>";
}

std::string
td_digest(const std::string& digest)
{
  return "<td class=\"digest\"><code title=\"" + html(digest) + "\">" + html(digest) + "</code></td>";
}

std::string
table(std::string_view id,
      std::string_view caption,
      std::initializer_list<std::string_view> heads,
      const std::vector<std::string>& rows)
{
  std::string text = "<section><h2>" + std::string(caption) + " (" + std::to_string(rows.size())
                     + ")</h2>\n<table id=\"" + std::string(id) + "\"><thead><tr>";
  for (const auto head : heads) {
    text += "<th>" + std::string(head) + "</th>";
  }
  text += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    text += row;
  }
  return text + "</tbody></table></section>\n";
}

} // namespace

// No request leaves the page (its Content-Security-Policy forbids any), so
// it can be mailed, archived or opened offline.
std::string
graph_html(const GraphPage& page, const std::vector<store::Event>& all_events)
{
  const std::vector<const store::Event*> events = page_events(all_events, page.project);
  struct Artifact
  {
    std::string name;
    std::string path;
    uint64_t size = 0;
    std::set<std::string> producers;
    std::set<std::string> consumers;
  };
  std::map<std::string, Artifact> artifacts; // by digest
  std::set<std::string> projects;
  for (const store::Event* event : events) {
    auto [it, inserted] = artifacts.try_emplace(event->digest);
    if (inserted) {
      it->second = {base_name(event->path), event->path, event->size, {}, {}};
    }
    const std::string who = event->project + "/" + event->target;
    (event->event == store::EventKind::consumed ? it->second.consumers : it->second.producers).insert(who);
    projects.insert(event->project);
  }
  const auto name_of = [&](const std::string& digest) {
    const auto it = artifacts.find(digest);
    return it != artifacts.end() ? it->second.name : digest.substr(0, 19) + "…";
  };

  std::vector<std::string> artifact_rows;
  for (const auto& [digest, artifact] : artifacts) {
    artifact_rows.push_back("<tr>" + td(artifact.name) + td(artifact.path) + td_digest(digest)
                            + "<td class=\"num\" title=\"" + std::to_string(artifact.size) + " bytes\">"
                            + html(human_size(artifact.size)) + "</td>" + td(listed(artifact.producers))
                            + td(listed(artifact.consumers)) + "</tr>\n");
  }
  std::vector<std::string> producer_rows;
  std::vector<std::string> consumer_rows;
  // A build that links a target twice (a re-run under the same build id)
  // records it twice: one row per artifact and build, the first time kept.
  std::set<std::tuple<store::EventKind, std::string, std::string, std::string, std::string, std::string>> seen;
  for (const store::Event* event : events) {
    if (!seen.emplace(event->event, event->digest, event->project, event->target, event->build, event->product)
           .second) {
      continue;
    }
    std::string row;
    if (event->event == store::EventKind::consumed) {
      row = "<tr>" + td(name_of(event->digest)) + td(event->project) + td(event->target) + td(event->build)
            + td(name_of(event->product)) + td(event->time) + "</tr>\n";
    } else {
      row = "<tr>" + td(name_of(event->digest)) + td(std::string(store::event_kind_name(event->event)))
            + td(event->project) + td(event->target) + td(event->build) + td(event->host) + td(event->time) + "</tr>\n";
    }
    (event->event == store::EventKind::consumed ? consumer_rows : producer_rows).push_back(std::move(row));
  }

  const std::string title = "fingerprint graph" + (page.project ? " of " + *page.project : std::string());
  std::string text = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>)" + html(title)
                     + R"(</title>
<script>addEventListener("error", function (e) { document.documentElement.dataset.error = String(e.message); });</script>
<style>)" + std::string(k_style)
                     + R"(</style>
</head>
<body>
<header>
<h1>)" + html(title) + "</h1>\n<p class=\"meta\">Store "
                     + html(page.store) + " &middot; " + std::to_string(projects.size()) + " projects &middot; "
                     + std::to_string(artifacts.size()) + " artifacts &middot; "
                     + (page.per_target ? "one node per target" : "one node per project") + R"(</p>
<input type="search" id="q" placeholder="Search projects, targets, files, digests" autofocus><span id="count"></span>
</header>
<section id="graph">
)";
  if (page.graph.value("edges", nlohmann::ordered_json::array()).empty()) {
    text += "<p class=\"note\">No producer &rarr; consumer edges recorded.</p>\n";
  }
  if (page.svg) {
    text += inline_svg(*page.svg);
  } else {
    text += "<svg id=\"layout\" role=\"img\"></svg>\n";
  }
  if (!page.layout_note.empty()) {
    text += "<p class=\"note\">" + html(page.layout_note) + "</p>\n";
  }
  text += "</section>\n";
  text +=
    table("artifacts", "Artifacts", {"Name", "Path", "Digest", "Size", "Produced by", "Consumed by"}, artifact_rows);
  text +=
    table("producers", "Producers", {"Artifact", "Event", "Project", "Target", "Build", "Host", "Time"}, producer_rows);
  text +=
    table("consumers", "Consumers", {"Artifact", "Project", "Target", "Build", "To produce", "Time"}, consumer_rows);
  text += "<script type=\"application/json\" id=\"graph-data\">" + script_json(page.graph) + "</script>\n";
  text += "<script>" + std::string(k_script) + "</script>\n</body>\n</html>\n";
  return text;
}

} // namespace fingerprint::cmd
