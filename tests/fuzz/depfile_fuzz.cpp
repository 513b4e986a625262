// The linker's dependency file, written by whichever linker the build uses
// (GNU ld, lld, mold) into the build tree. Read raw, the input must not
// crash the parser, and every input it yields becomes a path the runner
// digests, so none may be empty or span lines; CRLF line ends must read as
// LF. Read as a list of paths, one a line, the input must also survive the
// trip through each linker's own way of writing the file: what was linked
// is what is recorded.

#include <fingerprint/hook/link_inputs.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using fingerprint::hook::parse_depfile;
using Paths = std::vector<std::string>;

Paths
split_lines(std::string_view text)
{
  Paths lines;
  while (!text.empty()) {
    const size_t newline = std::min(text.find('\n'), text.size());
    lines.emplace_back(text.substr(0, newline));
    text.remove_prefix(std::min(newline + 1, text.size()));
  }
  return lines;
}

bool
has_any(std::string_view path, std::string_view characters)
{
  return path.find_first_of(characters) != std::string_view::npos;
}

// lld: one input per continuation line, ' ' and '#' escaped with a
// backslash and '$' doubled. It writes '/' for every backslash in a path,
// and leaves tabs and carriage returns alone, so paths with those are not
// its to write.
std::string
lld_depfile(const Paths& paths)
{
  auto escaped = [](const std::string& path) {
    std::string result;
    for (const char c : path) {
      if (c == ' ' || c == '#') {
        result += '\\';
      } else if (c == '$') {
        result += '$';
      }
      result += c;
    }
    return result;
  };
  std::string text = "bin/app:";
  for (const auto& path : paths) {
    text += " \\\n " + escaped(path);
  }
  text += "\n";
  for (const auto& path : paths) {
    text += "\n" + escaped(path) + ":\n";
  }
  return text;
}

// GNU ld: the same shape, nothing escaped; so only paths without the
// characters that lld's spelling gives a meaning to, and without white
// space at either end (it cannot be told from the separators).
std::string
gnu_ld_depfile(const Paths& paths)
{
  std::string text = "bin/app:";
  for (const auto& path : paths) {
    text += " \\\n  " + path;
  }
  text += "\n";
  for (const auto& path : paths) {
    text += "\n" + path + ":\n";
  }
  return text;
}

void
check_round_trips(std::string_view text)
{
  Paths paths = split_lines(text);
  std::erase_if(paths,
                [](const std::string& path) { return path.empty() || has_any(path, std::string_view("\\\t\r\0", 4)); });
  if (parse_depfile(lld_depfile(paths)) != paths) {
    __builtin_trap();
  }
  std::erase_if(
    paths, [](const std::string& path) { return has_any(path, "$") || path.front() == ' ' || path.back() == ' '; });
  if (parse_depfile(gnu_ld_depfile(paths)) != paths) {
    __builtin_trap();
  }
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto inputs = parse_depfile(text);
  for (const auto& input : inputs) {
    if (input.empty() || input.find('\n') != std::string::npos) {
      __builtin_trap();
    }
  }

  std::string crlf;
  crlf.reserve(text.size() * 2);
  for (const char c : text) {
    if (c == '\n') {
      crlf += '\r';
    }
    crlf += c;
  }
  if (parse_depfile(crlf) != inputs) {
    __builtin_trap();
  }

  check_round_trips(text);
  return 0;
}
