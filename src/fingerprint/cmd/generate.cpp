#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/hook/custom_rule.hpp>
#include <fingerprint/hook/link_inputs.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/util/process.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <exception>
#include <set>
#include <sys/stat.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "the project; required"},
  {"version", OptionKind::value, "V", "the project's version"},
  {"build-dir", OptionKind::value, "D", "the build tree (its build ids are counted there); required"},
  {"output", OptionKind::value, "FILE", "the custom command's first output (empty: not a generating command)"},
  {"required", OptionKind::flag, {}, "fail the build step when recording fails (else warn)"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
};

// Timestamps come from the kernel's coarse clock, which may lag the clock
// this process reads by a tick: an output written just after the command
// started can look older by this much.
constexpr int64_t k_clock_slack_ns = 20'000'000;

bool
regular_file(const std::string& path, struct stat& st)
{
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// What a custom command read: the program and every argument that names an
// existing file other than its output; its DEPENDS, and what its DEPFILE
// lists when this command wrote it, from the build files CMake generated
// (CMake does not hand a launcher either).
std::vector<hook::Input>
command_inputs(const std::vector<std::string>& command,
               const std::string& output,
               const std::string& build_dir,
               int64_t started)
{
  std::vector<hook::Input> inputs;
  std::set<std::string> seen{output};
  const std::string working_dir = absolute_path(".");
  const std::optional<hook::CustomRule> rule = hook::find_custom_rule(build_dir, output, working_dir);
  auto add = [&](std::string path, store::Role role) {
    if (seen.insert(path).second) {
      inputs.push_back({std::move(path), role});
    }
  };
  if (rule) {
    for (const std::string& path : rule->depends) {
      add(path, store::Role::declared);
    }
    struct stat st
    {};
    // A depfile an earlier build left says what that build read.
    if (!rule->depfile.empty() && regular_file(rule->depfile, st)
        && static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec >= started - k_clock_slack_ns) {
      if (auto text = util::read_regular_file(rule->depfile)) {
        for (const std::string& path : hook::parse_compiler_depfile(*text)) {
          struct stat input
          {};
          if (!path.empty() && regular_file(path, input)) {
            add(absolute_path(path), store::Role::compile);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < command.size(); ++i) {
    std::string path = command[i];
    if (i == 0 && path.find('/') == std::string::npos) {
      path = util::find_program(path).value_or("");
    }
    // "--in=/src/data.txt", "-I/src": the part after '=' or the option letters.
    if (i > 0 && path.starts_with('-')) {
      const size_t equals = path.find('=');
      path = equals == std::string::npos ? std::string() : path.substr(equals + 1);
    }
    struct stat st
    {};
    // What the command itself wrote (its DEPFILE, a second output named on
    // its command line) is not what it read.
    if (path.empty() || !regular_file(path, st)
        || static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec >= started) {
      continue;
    }
    path = absolute_path(path);
    if (rule && path == rule->depfile) {
      continue;
    }
    add(std::move(path), store::Role::declared);
  }
  return inputs;
}

// A custom command's words as the shell had them: CMake runs a custom
// command through the shell, which may start it with variable assignments
// (`LC_ALL=C sort ...`) or a builtin (`:`, `cd`). Those are run through
// /bin/sh again, the assignments kept and every other word quoted as the
// first shell left it; anything else is run directly.
std::vector<std::string>
as_run(const std::vector<std::string>& command)
{
  auto assignment = [](const std::string& word) {
    const size_t equals = word.find('=');
    if (equals == 0 || equals == std::string::npos || (word[0] >= '0' && word[0] <= '9')) {
      return false;
    }
    return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(equals), [](char c) {
      return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    });
  };
  const std::string& program = command.front();
  const bool found = program.find('/') != std::string::npos || util::find_program(program).has_value();
  if (found && !assignment(program)) {
    return command;
  }
  auto quote = [](const std::string& word) {
    std::string quoted = "'";
    for (const char c : word) {
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
  };
  std::string line;
  size_t i = 0;
  for (; i < command.size() && assignment(command[i]); ++i) {
    const size_t equals = command[i].find('=');
    line += command[i].substr(0, equals + 1) + quote(command[i].substr(equals + 1)) + " ";
  }
  for (; i < command.size(); ++i) {
    line += quote(command[i]) + " ";
  }
  return {"/bin/sh", "-c", line};
}

Expected<size_t>
record_generated(const Args& args, const std::string& output, int64_t started, Context& context)
{
  auto algorithm = algorithm_option(args);
  if (!algorithm) {
    return algorithm.error();
  }
  auto root = store_path(args);
  if (!root) {
    return root.error();
  }
  const std::string build_dir = absolute_path(*args.value("build-dir"));
  hook::RecordRequest request;
  request.store_root = *root;
  request.project = *args.value("project");
  request.version = args.value("version").value_or("");
  request.target = output.starts_with(build_dir + "/") ? output.substr(build_dir.size() + 1) : output;
  request.build_dir = build_dir;
  request.algorithm = *algorithm;
  request.spool = !args.flag("required");
  request.produced = {output};
  request.consumed = command_inputs(args.positional(), output, build_dir, started);
  request.build_id = hook::build_id_from_environment();
  if (request.build_id.empty()) {
    auto counted = hook::build_id_from_invocation(build_dir);
    if (!counted) {
      return counted.error();
    }
    request.build_id = *counted;
  }
  std::vector<std::string> file_errors;
  auto recorded = hook::record(
    request,
    [&](const Error& error) { file_errors.push_back(error.message); },
    [&](const std::string& warning) { print_warning(context, warning); });
  if (!recorded && !file_errors.empty()) {
    return Error{recorded.error().message + " (" + file_errors.front() + ")"};
  }
  return recorded;
}

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  if (args.positional().empty() || !args.value("project") || !args.value("build-dir")) {
    print_error(context, "generate: --project, --build-dir and -- COMMAND... are required");
    return k_exit_usage;
  }
  const int64_t started = util::now_ns();
  const std::vector<std::string>& command = args.positional();
  // CMake's own last step of a command with a DEPFILE, which rewrites the
  // depfile for Ninja: the output is the previous step's, just written.
  const bool cmake_step = command.size() >= 3 && command[1] == "-E" && command[2] == "cmake_transform_depfile";
  const std::string output = cmake_step ? std::string() : args.value("output").value_or("");
  if (!output.empty()) {
    hook::claim_build_id(absolute_path(*args.value("build-dir")));
  }
  auto status = util::run_program(as_run(command));
  if (!status) {
    print_error(context, status.error().message);
    return 127;
  }
  struct stat st
  {};
  const std::string path = output.empty() ? output : absolute_path(output);
  // Of a custom command's several commands, the one that wrote the output;
  // the others leave it missing or as an earlier build left it. The change
  // time, which a copy that keeps the modification time (cp -p) moves too.
  if (*status != 0 || path.empty() || !regular_file(path, st)
      || static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec < started - k_clock_slack_ns) {
    return *status;
  }
  Expected<size_t> recorded = Error{};
  try {
    recorded = record_generated(args, path, started, context);
  } catch (const std::exception& error) {
    recorded = Error{std::string("internal error: ") + error.what()};
  }
  if (!recorded) {
    const std::string message = display_path(path) + ": not fingerprinted: " + recorded.error().message;
    if (args.flag("required")) {
      print_error(context, message + " (FINGERPRINT_REQUIRED is ON)");
      return k_exit_failure;
    }
    print_warning(context, message + " (FINGERPRINT_REQUIRED is OFF, the build goes on)");
  }
  return k_exit_ok;
}

} // namespace

extern const Command k_generate_command{
  .name = "generate",
  .synopsis = "--project P --build-dir D [--output=FILE] [options] -- COMMAND...",
  .summary = "run a custom command and record the file it generated (the CMake module's custom-command hook)",
  .options = k_options,
  .run = run};

} // namespace fingerprint::cmd
