#pragma once

// Running other programs: no shell, no temporary file.

#include <fingerprint/util/expected.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::util {

// Runs `argv` (argv[0] looked up in $PATH as execvp does) with this
// process's standard streams and returns its exit status: 128 + the signal
// number when it died of one, as a shell reports it.
Expected<int> run_program(const std::vector<std::string>& argv);

// Replaces this process with `argv` (looked up in $PATH as execvp does).
// Returns only when that fails, with errno set.
void exec_program(const std::vector<std::string>& argv);

// What a program run with run_captured() left behind.
struct Captured
{
  int status = 0; // as run_program() returns it
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] a path) with `input` on its standard input and
// collects what it writes. Input, output and errors are served together
// through poll(): a program that writes before it has read all its input
// would otherwise fill its output pipe while we block feeding it.
Expected<Captured> run_captured(const std::vector<std::string>& argv, std::string_view input);

// Where execvp would find `name`: the first executable regular file of that
// name in $PATH, an empty entry meaning the current directory. Looked up
// beforehand, a missing program gets its own message rather than a bare
// ENOENT from the spawn.
std::optional<std::string> find_program(std::string_view name);

} // namespace fingerprint::util
