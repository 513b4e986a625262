#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/hook/link_inputs.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/process.hpp>

#include <cstdio>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace fingerprint::cmd {

namespace {

// The value of option `name` in a compile command ("-o x"; "-MF x" or
// "-MFx", or GCC's "-Wp,-MD,x" / "-Wp,-MMD,x" for the dependency file).
std::string
option_value(const std::vector<std::string>& command, std::string_view name)
{
  std::string value;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& argument = command[i];
    if (argument == name && i + 1 < command.size()) {
      value = command[++i];
    } else if (name == "-MF" && argument.starts_with(name) && argument.size() > name.size()) {
      value = argument.substr(name.size()); // "-MFx"; "-o" is never joined by CMake, and "-ofoo" may be a flag
    } else if (name == "-MF" && (argument.starts_with("-Wp,-MD,") || argument.starts_with("-Wp,-MMD,"))) {
      value = argument.substr(argument.find(',', 4) + 1);
    }
  }
  return value;
}

// Writes `paths` to `record`, NUL-terminated, replacing it whole, so that a
// link reading it meanwhile sees the old record or the new one.
bool
write_record(const std::string& record, const std::vector<std::string>& paths)
{
  std::string text;
  for (const auto& path : paths) {
    text += path;
    text += '\0';
  }
  return util::replace_file(record, text);
}

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  const std::vector<std::string>& command = args.positional();
  if (command.empty()) {
    print_error(context, "compile: -- COMMAND... is required");
    return k_exit_usage;
  }
  auto status = util::run_program(command);
  if (!status) {
    print_error(context, status.error().message);
    return 127;
  }
  const std::string object = option_value(command, "-o");
  if (object.empty()) {
    return *status; // not a compile to an object (a preprocessing run, say)
  }
  const std::string record = hook::compile_record_path(absolute_path(object));
  if (*status != 0) {
    ::unlink(record.c_str()); // the object is gone or old: so is what it read
    return *status;
  }
  const std::string depfile = option_value(command, "-MF");
  Expected<std::string> text = Error{};
  if (!depfile.empty()) {
    if (util::Fd fd(::open(depfile.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)); fd) {
      text = util::read_all(fd.get());
    }
  }
  std::vector<std::string> paths;
  if (text) {
    for (auto& path : hook::parse_compiler_depfile(*text)) {
      paths.push_back(absolute_path(path));
    }
  }
  // Never fails the compile: a link that finds no record says so.
  if (!text || !write_record(record, paths)) {
    ::unlink(record.c_str());
  }
  return *status;
}

} // namespace

extern const Command k_compile_command{
  .name = "compile",
  .synopsis = "-- COMMAND...",
  .summary = "run a compile and keep what it read, from its dependency file (the CMake module's compile hook)",
  .options = {},
  .run = run};

} // namespace fingerprint::cmd
