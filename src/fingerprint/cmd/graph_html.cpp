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
// them: who else made or read them is the point of the page. Of those,
// the `hidden` ones are left out and counted in `left_out`.
std::vector<const store::Event*>
page_events(const std::vector<store::Event>& events,
            const std::optional<std::string>& project,
            const std::set<std::string>& hidden,
            size_t& left_out)
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
  left_out = 0;
  for (const auto& digest : hidden) {
    left_out += digests.erase(digest);
  }
  std::vector<const store::Event*> kept;
  for (const auto& event : events) {
    if (digests.contains(event.digest)) {
      kept.push_back(&event);
    }
  }
  return kept;
}

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

// `note`: HTML to say under the caption.
std::string
table(std::string_view id,
      std::string_view caption,
      std::initializer_list<std::string_view> heads,
      const std::vector<std::string>& rows,
      std::string_view note = {})
{
  std::string text = "<section><h2>" + std::string(caption) + " (" + std::to_string(rows.size()) + ")</h2>\n";
  if (!note.empty()) {
    text += "<p class=\"note\" id=\"" + std::string(id) + "-note\">" + std::string(note) + "</p>\n";
  }
  text += "<table id=\"" + std::string(id) + "\"><thead><tr>";
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
  size_t hidden = 0;
  const std::vector<const store::Event*> events = page_events(all_events, page.project, page.hidden, hidden);
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
      it->second = {display_path(base_name(event->path)), display_path(event->path), event->size, {}, {}};
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
  std::set<std::tuple<store::EventKind, std::string, std::string, std::string, std::string, std::string, std::string>>
    seen;
  for (const store::Event* event : events) {
    const std::string role = event->event == store::EventKind::consumed ? query::role_of(*event) : std::string();
    if (!seen.emplace(event->event, event->digest, event->project, event->target, event->build, event->product, role)
           .second) {
      continue;
    }
    std::string row;
    if (event->event == store::EventKind::consumed) {
      row = "<tr>" + td(name_of(event->digest)) + td(event->project) + td(event->target) + td(event->build)
            + td(name_of(event->product)) + td(role) + td(event->time) + "</tr>\n";
    } else {
      row = "<tr>" + td(name_of(event->digest)) + td(std::string(store::event_kind_name(event->event)))
            + td(event->project) + td(event->target) + td(event->build) + td(event->host) + td(event->time) + "</tr>\n";
    }
    (event->event == store::EventKind::consumed ? consumer_rows : producer_rows).push_back(std::move(row));
  }

  std::string graph;
  if (page.graph.value("edges", nlohmann::ordered_json::array()).empty()) {
    graph += "<p class=\"note\">No producer &rarr; consumer edges recorded.</p>\n";
  }
  graph += page.svg ? inline_svg(*page.svg) : "<svg id=\"layout\" role=\"img\"></svg>\n";
  if (!page.layout_note.empty()) {
    graph += "<p class=\"note\">" + html(page.layout_note) + "</p>\n";
  }
  std::string tables;
  const std::string hidden_note =
    hidden == 0 ? std::string()
                : std::to_string(hidden) + (hidden == 1 ? " toolchain/system file" : " toolchain/system files")
                    + " hidden: no fingerprinted build produced " + (hidden == 1 ? "it" : "them")
                    + " (<code>fingerprint graph --all</code> shows them).";
  std::vector<std::string> build_rows;
  for (const auto& [build, provenance] : page.provenance) {
    if (provenance.is_null()) {
      continue; // recorded without (by hand, or FINGERPRINT_PROVENANCE OFF)
    }
    std::string commit_cell = "<td>&ndash;</td>";
    std::string branch;
    if (const auto source = provenance.is_object() ? provenance.find("source") : provenance.end();
        source != provenance.end() && source->is_object()) {
      const std::string commit = store::json_text(*source, "commit");
      const bool dirty = (*source)["dirty"].is_boolean() && (*source)["dirty"].get<bool>();
      const std::string remote = store::json_text(*source, "remote");
      commit_cell = "<td class=\"digest\"><code title=\"" + html(commit + (remote.empty() ? "" : " " + remote)) + "\">"
                    + html(commit.substr(0, 12)) + "</code>" + (dirty ? " <span class=\"dirty\">dirty</span>" : "")
                    + "</td>";
      branch = store::json_text(*source, "branch");
    }
    std::string toolchain;
    if (const auto compilers = provenance.is_object() ? provenance.find("compilers") : provenance.end();
        compilers != provenance.end() && compilers->is_object()) {
      for (const auto& [language, compiler] : compilers->items()) {
        toolchain += (toolchain.empty() ? "" : ", ") + language + " " + store::json_text(compiler, "id") + " "
                     + store::json_text(compiler, "version");
      }
    }
    const auto ci = provenance.is_object() ? provenance.find("ci") : provenance.end();
    const std::string ci_url = ci != provenance.end() && ci->is_object() ? store::json_text(*ci, "url") : std::string();
    build_rows.push_back("<tr>" + td(build.first) + td(build.second) + commit_cell + td(branch) + td(toolchain)
                         + td(store::json_text(provenance, "build_type"))
                         + td(store::json_text(provenance, "flags_digest").substr(0, 19), "digest") + td(ci_url)
                         + "</tr>\n");
  }
  if (!build_rows.empty()) {
    tables += table("builds",
                    "Builds",
                    {"Project", "Build", "Commit", "Branch", "Compilers", "Build type", "Flags", "CI run"},
                    build_rows,
                    "Each build's provenance: the source commit it was built from, its compilers and configuration "
                    "(<code>fingerprint build show PROJECT BUILD</code> has it all).");
  }
  tables += table("artifacts",
                  "Artifacts",
                  {"Name", "Path", "Digest", "Size", "Produced by", "Consumed by"},
                  artifact_rows,
                  hidden_note);
  tables +=
    table("producers", "Producers", {"Artifact", "Event", "Project", "Target", "Build", "Host", "Time"}, producer_rows);
  tables += table(
    "consumers", "Consumers", {"Artifact", "Project", "Target", "Build", "To produce", "Role", "Time"}, consumer_rows);

  const std::string title = html("fingerprint graph" + (page.project ? " of " + *page.project : std::string()));
  // The script is the page's behaviour: the search box (also set by a
  // #q=TEXT fragment), which hides table rows and dims graph nodes that do
  // not match every word; a click on a node searches for it; and, without
  // Graphviz, a layered layout of its own. It sets data-ready on <body> when
  // done, which a test reading the rendered DOM waits for.
  return fill(assets::k_graph_html,
              {{"title", title},
               {"style", assets::k_graph_css},
               {"store", html(page.store)},
               {"projects", std::to_string(projects.size())},
               {"artifacts", std::to_string(artifacts.size())},
               {"node", page.per_target ? "target" : "project"},
               {"graph", graph},
               {"tables", tables},
               {"data", script_json(page.graph)},
               {"script", assets::k_graph_js}});
}

} // namespace fingerprint::cmd
