#pragma once

// What the build files CMake generated say of a custom command: its
// DEPENDS (and MAIN_DEPENDENCY) and its DEPFILE, which CMake does not hand
// the command's launcher. Read from build.ninja and the files it includes
// (Ninja, Ninja Multi-Config) or from the build.make and DependInfo.cmake of
// the targets of one directory (Unix Makefiles).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::hook {

struct CustomRule
{
  std::vector<std::string> depends; // absolute; existing regular files only
  std::string depfile;              // the command's own DEPFILE, absolute; "" when it has none
};

// The rule that makes `output` (absolute) in the build tree `build_dir`
// (absolute, CMAKE_BINARY_DIR), or nullopt when none of its build files
// names it. `working_dir` is the command's: for Makefiles, its directory's
// targets are looked at first, then those of the output's directory.
std::optional<CustomRule> find_custom_rule(const std::string& build_dir,
                                           const std::string& output,
                                           const std::string& working_dir);

// The parts, for tests: the edge of a Ninja file's text that makes
// `output` (as Ninja names it: relative to the build tree, or absolute),
// its explicit and implicit inputs as written (unescaped), and the
// command's DEPFILE (from CMake's `cmake_transform_depfile` step, else the
// edge's depfile binding).
struct NinjaEdge
{
  std::vector<std::string> inputs;
  std::string depfile;
};
std::optional<NinjaEdge> find_ninja_edge(std::string_view text, std::string_view output);

// The inputs a build.make's text gives `output` ("out: in" lines, as CMake
// writes one per input; relative to the build tree), unescaped.
std::vector<std::string> find_make_inputs(std::string_view text, std::string_view output);

// The DEPFILE a DependInfo.cmake's text gives `output` ("" "out" "custom"
// "depfile"), or "".
std::string find_make_depfile(std::string_view text, std::string_view output);

} // namespace fingerprint::hook
