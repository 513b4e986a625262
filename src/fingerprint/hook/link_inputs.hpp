#pragma once

#include <fingerprint/util/expected.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::hook {

// A private path for the linker's dependency file of one link of one
// target: named by target and process, so no two hooks ever share it.
std::string depfile_path(const std::string& build_dir, const std::string& target);

// Parses a make-style dependency file ("out: in1 in2 \<newline> in3"), as
// GNU ld >= 2.35, lld and mold write for --dependency-file: the inputs, in
// order, unescaped ("\ " and "$$"). Phony "in:" lines are skipped.
std::vector<std::string> parse_depfile(std::string_view text);

// What a link consumed: the linker's dependency file when there is one,
// else the existing files named on the link line (CMake names libraries by
// full path). Drops the output itself and the build tree's own object files
// (they are intermediate, never recorded as produced); makes paths
// absolute; keeps the first of duplicates. What the linker left is never
// fatal, since a build must not fail for it: a dependency file that is not
// a regular file or cannot be read is passed to `on_warning` and the link
// line is read instead, and an input whose name holds a NUL byte (no file
// has one) is passed to `on_warning` and skipped.
std::vector<std::string> collect_link_inputs(const std::vector<std::string>& command,
                                             const std::string& depfile,
                                             const std::string& output,
                                             const std::string& build_dir,
                                             bool is_link,
                                             const std::function<void(const std::string&)>& on_warning);

// Per-target settings the CMake module writes at generate time (one file
// per configuration) from the FINGERPRINT_CONSUMES / FINGERPRINT_PRODUCES
// target properties.
struct TargetSettings
{
  std::vector<std::string> consumes;
  std::vector<std::string> produces;
};

// Reads <dir>/<target>/*.args and takes the one whose "output=" line names
// `output` (the configuration being built). Relative "consumes=" paths are
// taken from its "source_dir=", relative "produces=" from its "binary_dir=".
// No directory: no settings. A NUL byte in a file is an error.
Expected<TargetSettings> load_target_settings(const std::string& dir,
                                              const std::string& target,
                                              const std::string& output);

} // namespace fingerprint::hook
