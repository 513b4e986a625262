#pragma once

#include <fingerprint/util/expected.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::digest {
class BuildMemo;
}

namespace fingerprint::hook {

// A private path for the linker's dependency file of one link of one
// target: named by target and process, so no two hooks ever share it.
std::string depfile_path(const std::string& build_dir, const std::string& target);

// Parses a make-style dependency file ("out: in1 in2 \<newline> in3"), as
// GNU ld >= 2.35, lld and mold write for --dependency-file: the inputs, in
// order, unescaped ("\ " and "$$"). Phony "in:" lines are skipped.
std::vector<std::string> parse_depfile(std::string_view text);

// Parses a compiler's dependency file (-MD -MF), as GCC and Clang write it:
// the first rule's inputs, any number to a line, spaces in names escaped.
std::vector<std::string> parse_compiler_depfile(std::string_view text);

struct LinkInputs
{
  std::vector<std::string> inputs;  // what the linker read, but the build tree's objects
  std::vector<std::string> objects; // the build tree's objects it read (absolute)
};

// What a link consumed: the linker's dependency file when there is one,
// else the existing files named on the link line (CMake names libraries by
// full path), for an archive (`is_link` false) its objects only. Sets the
// output itself and the build tree's own object files aside (they are
// intermediate, never recorded as produced: their compiles' inputs are
// what counts, compile_inputs()); makes paths absolute; keeps the first of
// duplicates. Reads response files (@file) on the line. What the linker left is never
// fatal, since a build must not fail for it: a dependency file that is not
// a regular file or cannot be read is passed to `on_warning` and the link
// line is read instead, and an input whose name holds a NUL byte (no file
// has one) is passed to `on_warning` and skipped. A file `memo` holds (the
// build tool run's, in a recorder) was a regular file when this run first
// read it, and is not looked at again (digest::BuildMemo).
LinkInputs collect_link_inputs(const std::vector<std::string>& command,
                               const std::string& depfile,
                               const std::string& output,
                               const std::string& build_dir,
                               bool is_link,
                               const std::function<void(const std::string&)>& on_warning,
                               const digest::BuildMemo* memo = nullptr);

// An archive's steps before its last (hook/archive_steps.hpp): where they
// leave their commands; `keep_archive_step` appends a step that names
// members, and removes the file for any other (rm); the last step takes
// (reads and removes) the commands.
std::string archive_steps_path(const std::string& build_dir, const std::string& target, const std::string& output);
void keep_archive_step(const std::string& path, const std::vector<std::string>& command);
std::vector<std::vector<std::string>> take_archive_steps(const std::string& path);

// Where `fingerprint compile` keeps what the compile of `object` read:
// "<object>.fpdeps", absolute paths separated by NUL bytes.
std::string compile_record_path(const std::string& object);

// What the compiles of `objects` read (compile_record_path; for an object
// compiled without it, the dependency file Unix Makefiles keep beside it,
// or the record in Ninja's deps log in `build_dir` made when the object
// had its current mtime): their union, absolute, first seen first. An
// object with none, or whose record is older than it, is counted in
// `missing`.
std::vector<std::string> compile_inputs(const std::vector<std::string>& objects,
                                        size_t& missing,
                                        const std::string& build_dir = {});

// Per-target settings the CMake module writes at generate time (one file
// per configuration) from the FINGERPRINT_CONSUMES / FINGERPRINT_PRODUCES
// target properties.
struct TargetSettings
{
  std::vector<std::string> consumes;
  std::vector<std::string> produces;
  std::vector<std::string> interface; // a static library's link interface: the files it hands on
  std::string config;                 // "config=": the configuration ($<CONFIG>) the file is of
};

// Reads <dir>/<target>/*.args and takes the one whose "output=" line names
// `output` (the configuration being built). Relative "consumes=" paths are
// taken from its "source_dir=", relative "produces=" from its "binary_dir=".
// No directory: no settings. A NUL byte in a file is an error.
Expected<TargetSettings> load_target_settings(const std::string& dir,
                                              const std::string& target,
                                              const std::string& output);

} // namespace fingerprint::hook
