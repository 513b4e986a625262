#include <fingerprint/cmd/assets/graph.css.hpp>
#include <fingerprint/cmd/assets/graph.html.hpp>
#include <fingerprint/cmd/assets/graph.js.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/graph_html.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/provenance.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace fingerprint::cmd {

namespace {

struct Escape
{
  char c;
  std::string_view with;
};

// `text` with each character `escapes` names replaced.
std::string
escaped(std::string_view text, std::initializer_list<Escape> escapes)
{
  std::string result;
  result.reserve(text.size());
  for (const char c : text) {
    const auto escape = std::find_if(escapes.begin(), escapes.end(), [c](const Escape& e) { return e.c == c; });
    if (escape != escapes.end()) {
      result += escape->with;
    } else {
      result += c;
    }
  }
  return result;
}

// Text for HTML content and quoted attribute values. Bytes that are not
// UTF-8 are left to the browser, whose decoder turns them into U+FFFD without
// ever swallowing the ASCII that follows, so they cannot undo the escaping.
std::string
html(std::string_view text)
{
  return escaped(text, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}});
}

// JSON to sit inside a <script> element: all ASCII (so U+2028/2029 and
// other line breaks JavaScript might care about are \u escapes), and with
// <, > and & escaped too, so neither "</script>" nor "<!--" can occur in it.
std::string
script_json(const nlohmann::ordered_json& value)
{
  return escaped(value.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace),
                 {{'<', "\\u003c"}, {'>', "\\u003e"}, {'&', "\\u0026"}});
}

// The template with each {{name}} in it replaced by its value. One pass,
// so a value is never searched for names: data that spells "{{title}}"
// stays as it is.
std::string
fill(std::string_view page, std::initializer_list<std::pair<std::string_view, std::string_view>> values)
{
  std::string text;
  size_t at = 0;
  for (size_t open = page.find("{{"); open != std::string_view::npos; open = page.find("{{", at)) {
    const size_t close = page.find("}}", open);
    const std::string_view name = page.substr(open + 2, close - open - 2);
    const auto value = std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.first == name; });
    if (close == std::string_view::npos || value == values.end()) {
      throw std::logic_error("graph.html names {{" + std::string(name) + "}}, which the page has no value for");
    }
    text.append(page.substr(at, open - at)).append(value->second);
    at = close + 2;
  }
  return text.append(page.substr(at));
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

// The page's data: what its script draws the tables and panels from.
// Artifacts and builds are listed once and named by their index elsewhere,
// which keeps a store of 10,000 artifacts to a few megabytes.
class PageData
{
public:
  PageData(const GraphPage& page, const std::vector<const store::Event*>& events)
  {
    for (const store::Event* event : events) {
      add_event(*event, page);
    }
    for (auto& build : m_builds) {
      const auto provenance = page.provenance.find({build["project"], build["build"]});
      build["provenance"] = provenance != page.provenance.end() ? provenance->second : nullptr;
    }
  }

  size_t
  toolchain_files() const
  {
    return m_toolchain;
  }

  // A drawing's nodes and edges, each edge's artifacts by index (those the
  // page shows: with --project, not every one).
  nlohmann::ordered_json
  view(const GraphView& view) const
  {
    nlohmann::ordered_json json = {{"nodes", view.graph["nodes"]}, {"edges", nlohmann::ordered_json::array()}};
    for (const auto& edge : view.graph["edges"]) {
      auto artifacts = nlohmann::ordered_json::array();
      for (const auto& digest : edge["artifacts"]) {
        if (const auto it = m_artifact_index.find(digest); it != m_artifact_index.end()) {
          artifacts.push_back(it->second);
        }
      }
      json["edges"].push_back({{"from", edge["from"]}, {"to", edge["to"]}, {"artifacts", std::move(artifacts)}});
    }
    json["versions"] = view.versions;
    return json;
  }

  void
  put(nlohmann::ordered_json& json) &&
  {
    json["artifacts"] = std::move(m_artifacts);
    json["builds"] = std::move(m_builds);
    json["events"] = std::move(m_events);
  }

private:
  size_t
  artifact(const std::string& digest, const GraphPage& page)
  {
    auto [it, added] = m_artifact_index.try_emplace(digest, m_artifacts.size());
    if (added) {
      const bool toolchain = page.hidden.contains(digest);
      m_toolchain += toolchain ? 1 : 0;
      m_artifacts.push_back(
        {{"digest", digest}, {"size", 0}, {"paths", nlohmann::ordered_json::array()}, {"toolchain", toolchain}});
      m_paths.emplace_back();
    }
    return it->second;
  }

  void
  add_event(const store::Event& event, const GraphPage& page)
  {
    const std::string role = event.event == store::EventKind::consumed ? query::role_of(event) : std::string();
    // A build that links a target twice (a re-run under the same build id)
    // records it twice: one row per artifact and build, the first time kept.
    if (!m_seen.emplace(event.event, event.digest, event.project, event.target, event.build, event.product, role)
           .second) {
      return;
    }
    const size_t a = artifact(event.digest, page);
    auto& artifact_json = m_artifacts[a];
    artifact_json["size"] = event.size;
    if (const std::string path = display_path(event.path); m_paths[a].insert(path).second) {
      artifact_json["paths"].push_back(path);
    }
    auto [build, added] = m_build_index.try_emplace({event.project, event.build}, m_builds.size());
    if (added) {
      m_builds.push_back({{"project", event.project},
                          {"build", event.build},
                          {"version", event.version},
                          {"host", event.host},
                          {"build_dir", display_path(event.build_dir)},
                          {"time", event.time}});
    } else if (event.time < m_builds[build->second]["time"].get<std::string>()) {
      m_builds[build->second]["time"] = event.time;
    }
    nlohmann::ordered_json json = {{"kind", store::event_kind_name(event.event)},
                                   {"artifact", a},
                                   {"build", build->second},
                                   {"target", event.target},
                                   {"time", event.time}};
    if (event.event == store::EventKind::consumed) {
      json["product"] = artifact(event.product, page);
      json["role"] = role;
    } else {
      json["signature"] = signature_json(event);
    }
    if (event.event == store::EventKind::installed) {
      json["from"] = artifact(event.from, page);
    }
    m_events.push_back(std::move(json));
  }

  nlohmann::ordered_json m_artifacts = nlohmann::ordered_json::array();
  nlohmann::ordered_json m_builds = nlohmann::ordered_json::array();
  nlohmann::ordered_json m_events = nlohmann::ordered_json::array();
  std::map<std::string, size_t> m_artifact_index;
  std::vector<std::set<std::string>> m_paths;
  std::map<std::pair<std::string, std::string>, size_t> m_build_index;
  std::set<std::tuple<store::EventKind, std::string, std::string, std::string, std::string, std::string, std::string>>
    m_seen;
  size_t m_toolchain = 0;
};

// A drawing for the page: dot's SVG inline, else an empty SVG the script
// lays the graph out in.
std::string
drawing_html(const std::optional<GraphView>& view, std::string_view name, bool shown)
{
  if (!view) {
    return {};
  }
  return "<div class=\"view\" data-view=\"" + std::string(name) + "\"" + (shown ? "" : " hidden") + ">\n"
         + (view->svg ? inline_svg(*view->svg) : "<svg class=\"layout\" role=\"img\"></svg>\n") + "</div>\n";
}

} // namespace

// No request leaves the page (its Content-Security-Policy forbids any), so
// it can be mailed, archived or opened offline.
std::string
graph_html(const GraphPage& page, const std::vector<store::Event>& all_events)
{
  PageData data(page, page_events(all_events, page.project));
  nlohmann::ordered_json json = data.view(page.main);
  json["toolchain"] = page.toolchain ? data.view(*page.toolchain) : nlohmann::ordered_json();
  json["show_toolchain"] = page.show_toolchain && page.toolchain;
  json["per_target"] = page.per_target;
  json["colours"] = page.colours;
  const size_t toolchain_files = data.toolchain_files();
  std::move(data).put(json);

  const bool toolchain_shown = page.show_toolchain && page.toolchain;
  std::string graph;
  if (page.main.graph.value("edges", nlohmann::ordered_json::array()).empty() && !toolchain_shown) {
    graph += "<p class=\"note\">No producer &rarr; consumer edges recorded.</p>\n";
  }
  graph += drawing_html(page.main, "main", !toolchain_shown);
  graph += drawing_html(page.toolchain, "toolchain", toolchain_shown);
  if (!page.layout_note.empty()) {
    graph += "<p class=\"note\">" + html(page.layout_note) + "</p>\n";
  }
  // Said once by the page as written, for a reader without its script;
  // the script keeps it true as the toggle turns.
  const std::string toolchain_note =
    toolchain_files == 0 || toolchain_shown
      ? std::string()
      : "<p class=\"note\" id=\"toolchain-note\">" + std::to_string(toolchain_files)
          + (toolchain_files == 1 ? " toolchain/system file" : " toolchain/system files")
          + " hidden: no fingerprinted build produced " + (toolchain_files == 1 ? "it" : "them")
          + " (&ldquo;Toolchain files&rdquo; above, or <code>fingerprint graph --all</code>, shows them).</p>\n";

  const std::string title = html("fingerprint graph" + (page.project ? " of " + *page.project : std::string()));
  // The script is the page's behaviour (assets/graph.js says what it
  // does). It sets data-ready on <body> when done, which a test reading
  // the rendered DOM waits for.
  return fill(assets::k_graph_html,
              {{"title", title},
               {"style", assets::k_graph_css},
               {"store", html(page.store)},
               {"node", page.per_target ? "target" : "project"},
               {"toolchain", std::to_string(toolchain_files)},
               {"toolchain_checked", toolchain_shown ? " checked" : ""},
               {"toolchain_disabled", page.toolchain ? "" : " disabled"},
               {"graph", graph},
               {"note", toolchain_note},
               {"data", script_json(json)},
               {"script", assets::k_graph_js}});
}

} // namespace fingerprint::cmd
