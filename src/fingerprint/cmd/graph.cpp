#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/cmd/graph_html.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <optional>
#include <poll.h>
#include <set>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"format", OptionKind::value, "F", "text (default), dot, mermaid, json, svg (needs Graphviz's dot) or html"},
  {"project", OptionKind::value, "P", "only edges into or out of project P"},
  {"artifacts", OptionKind::flag, {}, "one node per target rather than per project"},
  {"output", OptionKind::value, "FILE", "write to FILE rather than to standard output"},
};

constexpr std::string_view k_no_dot = "graph: --format svg needs Graphviz's dot (apt-get install graphviz)";

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

using Edges = std::map<Edge, std::set<std::string>>; // -> the names of the artifacts passed along

struct Graph
{
  Edges edges;
  std::vector<store::Event> events; // the whole build index, for the page's tables
};

// The producer -> consumer graph from the build index: an edge for every
// consumed artifact whose producer (or, for an installed copy, whose
// origin's producer) is recorded. Artifacts of unknown origin (system
// libraries) are left out: they would drown the picture.
Expected<Graph>
collect(const store::Store& store, bool per_target, Context& context)
{
  Graph graph;
  std::vector<store::LogProblem> problems;
  auto ok = query::for_each_indexed_event(
    store, [&](store::Event& event) { graph.events.push_back(std::move(event)); }, problems);
  report_problems(context, store.location(), problems);
  if (!ok) {
    return ok.error();
  }
  auto node = [&](const store::Event& event) {
    return per_target ? event.project + "/" + event.target : event.project;
  };
  std::map<std::string, std::string> producer_of; // digest -> node
  std::map<std::string, std::string> installed_from;
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::produced) {
      producer_of[event.digest] = node(event);
    } else if (event.event == store::EventKind::installed) {
      installed_from[event.digest] = event.from;
    }
  }
  for (const auto& event : graph.events) {
    if (event.event != store::EventKind::consumed) {
      continue;
    }
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
      graph.edges[{producer->second, consumer}].insert(base_name(event.path));
    }
  }
  return graph;
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

std::string
dot_text(const Edges& edges)
{
  std::string text = "digraph fingerprint {\n  rankdir=LR;\n  node [shape=box];\n";
  for (const auto& [edge, names] : edges) {
    text +=
      "  " + dot_quoted(edge.from) + " -> " + dot_quoted(edge.to) + " [label=" + dot_quoted(joined(names)) + "];\n";
  }
  return text + "}\n";
}

nlohmann::ordered_json
graph_json(const Edges& edges)
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
  return json;
}

// ---- Graphviz, through a pipe ------------------------------------------

// Where execvp would find `name`: the first executable regular file of
// that name in $PATH, an empty entry meaning the current directory. Looked
// up beforehand so that a missing Graphviz gets its own message rather
// than a bare ENOENT from the spawn.
std::optional<std::string>
find_program(std::string_view name)
{
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + std::string(name);
    struct stat status;
    if (::stat(candidate.c_str(), &status) == 0 && S_ISREG(status.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) {
      return std::nullopt;
    }
    dirs.remove_prefix(colon + 1);
  }
}

class SpawnActions
{
public:
  SpawnActions() { ::posix_spawn_file_actions_init(&m_actions); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  ~SpawnActions() { ::posix_spawn_file_actions_destroy(&m_actions); }
  posix_spawn_file_actions_t*
  get()
  {
    return &m_actions;
  }

private:
  posix_spawn_file_actions_t m_actions{};
};

struct Finished
{
  int status = 0; // the exit status, 128 + the signal number when it died of one
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] a path) with `input` on its standard input, no
// shell and no temporary file. Input, output and errors are served
// together through poll(): a program that writes before it has read all
// its input would otherwise fill its output pipe while we block feeding it.
Expected<Finished>
run_program(const std::vector<std::string>& argv, std::string_view input)
{
  const auto fail = [&](int errno_value) { return make_error(argv[0], util::errno_text(errno_value)); };
  // Its standard input is a socket rather than a pipe: send(MSG_NOSIGNAL)
  // turns a program that exits without reading everything into EPIPE, where
  // writing to a pipe would raise SIGPIPE and kill the runner.
  int in[2];
  int out[2];
  int err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    return fail(errno);
  }
  util::Fd to_child(in[0]);
  util::Fd child_in(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return fail(errno);
  }
  util::Fd from_child(out[0]);
  util::Fd child_out(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return fail(errno);
  }
  util::Fd errors_from_child(err[0]);
  util::Fd child_err(err[1]);

  SpawnActions actions;
  ::posix_spawn_file_actions_adddup2(actions.get(), child_in.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), child_out.get(), STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(actions.get(), child_err.get(), STDERR_FILENO);
  std::vector<char*> c_argv;
  for (const auto& argument : argv) {
    c_argv.push_back(const_cast<char*>(argument.c_str()));
  }
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int spawned = ::posix_spawn(&pid, argv[0].c_str(), actions.get(), nullptr, c_argv.data(), environ);
      spawned != 0) {
    return fail(spawned);
  }
  // Only the child may hold its ends, or it would never see end of file.
  child_in.reset();
  child_out.reset();
  child_err.reset();

  Finished finished;
  int poll_error = 0;
  if (input.empty()) {
    to_child.reset();
  }
  while (to_child || from_child || errors_from_child) {
    std::vector<pollfd> fds;
    for (const util::Fd* fd : {&to_child, &from_child, &errors_from_child}) {
      if (*fd) {
        fds.push_back({fd->get(), static_cast<short>(fd == &to_child ? POLLOUT : POLLIN), 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      poll_error = errno;
      break;
    }
    for (const pollfd& ready : fds) {
      if (ready.revents == 0) {
        continue;
      }
      if (ready.fd == to_child.get()) {
        const ssize_t sent = ::send(ready.fd, input.data(), input.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent >= 0) {
          input.remove_prefix(static_cast<size_t>(sent));
        } else if (errno != EAGAIN && errno != EINTR) {
          input = {}; // it stopped reading; its exit status and errors say why
        }
        if (input.empty()) {
          to_child.reset();
        }
        continue;
      }
      util::Fd& source = ready.fd == from_child.get() ? from_child : errors_from_child;
      char buffer[65536];
      const ssize_t got = ::read(ready.fd, buffer, sizeof buffer);
      if (got > 0) {
        (&source == &from_child ? finished.out : finished.err).append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        source.reset();
      }
    }
  }
  // Reaped on every path, the failed poll included: the closed descriptors
  // make it end.
  to_child.reset();
  from_child.reset();
  errors_from_child.reset();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return fail(errno);
    }
  }
  if (poll_error != 0) {
    return fail(poll_error);
  }
  finished.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return finished;
}

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
  auto finished = run_program({dot, "-Tsvg"}, dot_input);
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
run(Invocation& call)
{
  const Args& args = call.args;
  Context& context = call.context;
  const auto& store = call.store;
  const std::string format = args.value("format").value_or("text");
  const std::set<std::string> formats = {"text", "dot", "mermaid", "json", "svg", "html"};
  if (!formats.contains(format)) {
    print_error(context, "graph: --format: '" + format + "' is not one of text, dot, mermaid, json, svg, html");
    return k_exit_usage;
  }
  // Before reading the store, which may be large: without Graphviz an SVG
  // cannot be made at all, while the page lays the graph out itself.
  std::optional<std::string> dot;
  if (format == "svg" || format == "html") {
    dot = find_program("dot");
    if (!dot && format == "svg") {
      print_error(context, k_no_dot);
      return k_exit_failure;
    }
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
  Edges edges;
  for (auto& [edge, names] : all->edges) {
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
    text = dot_text(edges);
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
    for (const auto& [edge, names] : edges) {
      const std::string from = id(edge.from);
      const std::string to = id(edge.to);
      text += "  " + from + " -->|" + mermaid_quoted(joined(names)) + "| " + to + "\n";
    }
  } else if (format == "json") {
    text = dump_json(graph_json(edges));
  } else if (format == "svg") {
    auto svg = graphviz_svg(*dot, dot_text(edges), context);
    if (!svg) {
      print_error(context, "graph: " + svg.error().message);
      return k_exit_failure;
    }
    text = std::move(*svg);
  } else {
    GraphPage page{store->location(), project, per_target, graph_json(edges), std::nullopt, {}};
    if (dot) {
      auto svg = graphviz_svg(*dot, dot_text(edges), context);
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

const Command&
graph_command()
{
  static const Command k_command{
    .name = "graph",
    .synopsis = "[--format text|dot|mermaid|json|svg|html] [--project P] [--artifacts] [--output FILE]",
    .summary = "the producer -> consumer graph between projects (or targets)",
    .options = k_options,
    .run = run,
    .needs = Needs::store};
  return k_command;
}

} // namespace fingerprint::cmd
