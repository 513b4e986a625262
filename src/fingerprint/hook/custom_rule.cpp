#include <fingerprint/hook/custom_rule.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>

#include <algorithm>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>

namespace fingerprint::hook {

namespace {

std::string_view
trim(std::string_view text)
{
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

bool
regular_file(const std::string& path)
{
  struct stat st
  {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// `path` made absolute against `base`; "." and ".." left to the kernel.
std::string
against(const std::string& base, const std::string& path)
{
  return path.starts_with('/') ? path : base + "/" + path;
}

// The names of the entries of `dir` that match `keep`, sorted.
template <typename Keep>
std::vector<std::string>
entries_of(const std::string& dir, Keep keep)
{
  std::vector<std::string> names = util::sorted_entries(dir);
  std::erase_if(names, [&](const std::string& name) { return !keep(name); });
  return names;
}

// One token of a Ninja build line: a path (unescaped) or a separator.
struct NinjaToken
{
  enum Kind
  {
    word,
    colon,       // ":" after the outputs
    pipe,        // "|": implicit outputs or inputs follow
    double_pipe, // "||": order-only inputs follow
    pipe_at,     // "|@": validations follow
  } kind = word;
  std::string text;
};

// Tokens of one logical line (continuations joined): "$ ", "$:", "$$"
// unescaped; variable references are kept as written.
std::vector<NinjaToken>
ninja_tokens(std::string_view line)
{
  std::vector<NinjaToken> tokens;
  std::string current;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) {
      tokens.push_back({NinjaToken::word, std::move(current)});
      current.clear();
      in_word = false;
    }
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '$' && i + 1 < line.size()) {
      const char next = line[++i];
      if (next == ' ' || next == ':' || next == '$') {
        current += next;
      } else {
        current += '$';
        current += next;
      }
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == ':') {
      end_word();
      tokens.push_back({NinjaToken::colon, {}});
    } else if (c == '|' && !in_word) {
      if (i + 1 < line.size() && line[i + 1] == '|') {
        tokens.push_back({NinjaToken::double_pipe, {}});
        ++i;
      } else if (i + 1 < line.size() && line[i + 1] == '@') {
        tokens.push_back({NinjaToken::pipe_at, {}});
        ++i;
      } else {
        tokens.push_back({NinjaToken::pipe, {}});
      }
    } else {
      current += c;
      in_word = true;
    }
  }
  end_word();
  return tokens;
}

// The next logical line of Ninja text (a "$" at the end of a line joins the
// next, without its leading blanks), and whether it was indented.
bool
next_ninja_line(std::string_view& text, std::string& line, bool& indented)
{
  if (text.empty()) {
    return false;
  }
  line.clear();
  indented = text.front() == ' ' || text.front() == '\t';
  bool first = true;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view part = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!part.empty() && part.back() == '\r') {
      part.remove_suffix(1);
    }
    if (!first) {
      part.remove_prefix(std::min(part.size(), part.find_first_not_of(" \t")));
    }
    first = false;
    // An odd run of '$' at the end: the last one escapes the newline.
    size_t dollars = 0;
    while (dollars < part.size() && part[part.size() - 1 - dollars] == '$') {
      ++dollars;
    }
    if (dollars % 2 == 1) {
      line.append(part.substr(0, part.size() - 1));
      continue;
    }
    line.append(part);
    break;
  }
  return true;
}

// The words of a shell command line as CMake writes a custom command's:
// blanks separate words, double or single quotes keep blanks, a backslash
// escapes the next byte.
std::vector<std::string>
shell_words(std::string_view line)
{
  std::vector<std::string> words;
  std::string current;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        current += line[++i];
      } else {
        current += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      current += line[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) {
        words.push_back(std::move(current));
        current.clear();
        in_word = false;
      }
    } else {
      current += c;
      in_word = true;
    }
  }
  if (in_word) {
    words.push_back(std::move(current));
  }
  return words;
}

// The DEPFILE of a custom command from its Ninja COMMAND: CMake runs
// `cmake -E cmake_transform_depfile <generator> <format> <top source>
// <source dir> <top binary> <binary dir> <depfile> <transformed>` last.
std::string
depfile_from_command(std::string_view command)
{
  const std::vector<std::string> words = shell_words(command);
  for (size_t i = 0; i + 7 < words.size(); ++i) {
    if (words[i] == "cmake_transform_depfile") {
      return words[i + 7];
    }
  }
  return {};
}

constexpr std::string_view k_workdir = "${cmake_ninja_workdir}";

// Whether an output word of a build line names `output`.
bool
names_output(std::string_view word, std::string_view output)
{
  if (word.starts_with(k_workdir)) {
    word.remove_prefix(k_workdir.size());
  }
  return word == output;
}

// Ninja files to look in, in order: build.ninja and what it includes, then
// every configuration's of a multi-config tree.
std::vector<std::string>
ninja_files(const std::string& build_dir)
{
  std::vector<std::string> files{build_dir + "/build.ninja"};
  for (const std::string& name : entries_of(build_dir + "/CMakeFiles", [](const std::string& n) {
         return n.ends_with(".ninja") && (n.starts_with("impl-") || n == "common.ninja");
       })) {
    files.push_back(build_dir + "/CMakeFiles/" + name);
  }
  return files;
}

} // namespace

std::optional<NinjaEdge>
find_ninja_edge(std::string_view text, std::string_view output)
{
  // The output's last component is in the build line that makes it: lines
  // without it are not tokenized.
  std::string_view base = output.substr(output.rfind('/') == std::string_view::npos ? 0 : output.rfind('/') + 1);
  if (base.find_first_of(" :$") != std::string_view::npos) {
    base = {};
  }
  std::string line;
  bool indented = false;
  while (next_ninja_line(text, line, indented)) {
    if (indented || !line.starts_with("build ") || line.find(base) == std::string::npos) {
      continue;
    }
    const std::vector<NinjaToken> tokens = ninja_tokens(std::string_view(line).substr(6));
    size_t i = 0;
    bool made = false;
    for (; i < tokens.size() && tokens[i].kind != NinjaToken::colon; ++i) {
      made = made || (tokens[i].kind == NinjaToken::word && names_output(tokens[i].text, output));
    }
    if (!made) {
      continue;
    }
    NinjaEdge edge;
    // The rule's name, then explicit and implicit inputs up to "||" or "|@".
    for (i += 2; i < tokens.size(); ++i) {
      if (tokens[i].kind == NinjaToken::double_pipe || tokens[i].kind == NinjaToken::pipe_at) {
        break;
      }
      if (tokens[i].kind == NinjaToken::word) {
        edge.inputs.push_back(tokens[i].text);
      }
    }
    // Its bindings: the indented lines that follow.
    std::string depfile_binding;
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
      next_ninja_line(text, line, indented);
      const std::string_view binding = trim(line);
      if (binding.starts_with("COMMAND = ")) {
        edge.depfile = depfile_from_command(binding.substr(10));
      } else if (binding.starts_with("depfile = ")) {
        depfile_binding = binding.substr(10);
      }
    }
    if (edge.depfile.empty()) {
      edge.depfile = depfile_binding;
    }
    return edge;
  }
  return std::nullopt;
}

std::vector<std::string>
find_make_inputs(std::string_view text, std::string_view output)
{
  // "sub/gen.h: ../data.txt" with blanks escaped "\ ", one input a line.
  std::vector<std::string> inputs;
  std::string escaped;
  for (const char c : output) {
    if (c == ' ' || c == '#' || c == '\\' || c == ':') {
      escaped += '\\';
    }
    escaped += c == '$' ? std::string("$$") : std::string(1, c);
  }
  escaped += ": ";
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.starts_with(escaped)) {
      continue;
    }
    std::string input;
    const std::string_view rest = line.substr(escaped.size());
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '\\' && i + 1 < rest.size()) {
        input += rest[++i];
      } else if (rest[i] == '$' && i + 1 < rest.size() && rest[i + 1] == '$') {
        input += rest[++i];
      } else {
        input += rest[i];
      }
    }
    if (!input.empty()) {
      inputs.push_back(std::move(input));
    }
  }
  return inputs;
}

std::string
find_make_depfile(std::string_view text, std::string_view output)
{
  // `  "" "<output>" "custom" "<depfile>"`, CMake's quoting (\" and \\).
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = trim(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (!quoted && line[i] == '"') {
        quoted = true;
      } else if (quoted && line[i] == '\\' && i + 1 < line.size()) {
        field += line[++i];
      } else if (quoted && line[i] == '"') {
        quoted = false;
        fields.push_back(std::move(field));
        field.clear();
      } else if (quoted) {
        field += line[i];
      }
    }
    if (fields.size() == 4 && fields[0].empty() && fields[1] == output && fields[2] == "custom") {
      return fields[3];
    }
  }
  return {};
}

std::optional<CustomRule>
find_custom_rule(const std::string& build_dir, const std::string& output, const std::string& working_dir)
{
  // Both generators name files in the build tree relative to it.
  const std::string relative = output.starts_with(build_dir + "/") ? output.substr(build_dir.size() + 1) : output;
  const std::string internal = build_dir + "/CMakeFiles/";
  CustomRule rule;
  auto add = [&](const std::string& base, const std::string& input, std::set<std::string>& seen) {
    std::string path = util::absolute_path(against(base, input));
    // CMake's own bookkeeping (Makefiles' compiler_depend.ts) is no input;
    // nor is a phony name or a directory.
    if (path == output || path.starts_with(internal) || !regular_file(path) || !seen.insert(path).second) {
      return;
    }
    rule.depends.push_back(std::move(path));
  };
  std::set<std::string> seen;
  if (regular_file(build_dir + "/build.ninja")) {
    for (const std::string& file : ninja_files(build_dir)) {
      auto text = util::read_regular_file(file);
      if (!text) {
        continue;
      }
      auto edge = find_ninja_edge(*text, relative);
      if (!edge && relative != output) {
        edge = find_ninja_edge(*text, output);
      }
      if (!edge) {
        continue;
      }
      for (const std::string& input : edge->inputs) {
        add(build_dir, input, seen);
      }
      if (!edge->depfile.empty()) {
        rule.depfile = util::absolute_path(against(build_dir, edge->depfile));
      }
      return rule;
    }
    return std::nullopt;
  }
  // Unix Makefiles: the targets of the command's directory, else of the
  // output's.
  std::vector<std::string> dirs{working_dir};
  if (const size_t slash = output.rfind('/'); slash != std::string::npos && output.substr(0, slash) != working_dir) {
    dirs.push_back(output.substr(0, slash));
  }
  for (const std::string& dir : dirs) {
    const std::string targets = dir + "/CMakeFiles";
    for (const std::string& name : entries_of(targets, [](const std::string& n) { return n.ends_with(".dir"); })) {
      auto text = util::read_regular_file(targets + "/" + name + "/build.make");
      if (!text) {
        continue;
      }
      const std::vector<std::string> inputs = find_make_inputs(*text, relative);
      if (inputs.empty()) {
        continue;
      }
      for (const std::string& input : inputs) {
        add(build_dir, input, seen);
      }
      if (auto info = util::read_regular_file(targets + "/" + name + "/DependInfo.cmake")) {
        const std::string depfile = find_make_depfile(*info, relative);
        if (!depfile.empty()) {
          rule.depfile = util::absolute_path(against(build_dir, depfile));
        }
      }
      return rule;
    }
  }
  return std::nullopt;
}

} // namespace fingerprint::hook
