#include <fingerprint/core/link_inputs.hpp>
#include <fingerprint/util/fd.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::core {

namespace {

namespace fs = std::filesystem;

std::string
absolute(const std::string& path)
{
  std::error_code error;
  auto result = fs::absolute(path, error);
  return error ? path : result.lexically_normal().string();
}

bool
is_regular_file(const std::string& path)
{
  struct stat st
  {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool
is_object_file(std::string_view path)
{
  return path.ends_with(".o") || path.ends_with(".obj");
}

bool
looks_like_library(std::string_view path)
{
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.ends_with(".a") || name.ends_with(".so") || name.find(".so.") != std::string_view::npos
         || is_object_file(name);
}

} // namespace

std::string
depfile_path(const std::string& build_dir, const std::string& target)
{
  const std::string dir = build_dir + "/CMakeFiles/fingerprint/deps";
  std::error_code ignored;
  fs::create_directories(dir, ignored);
  std::string safe = target;
  for (char& c : safe) {
    if (c == '/' || c == '\0') {
      c = '_';
    }
  }
  return dir + "/" + safe + "." + std::to_string(::getpid()) + ".d";
}

std::vector<std::string>
parse_depfile(std::string_view text)
{
  std::vector<std::string> inputs;
  std::string word;
  bool after_colon = false;
  auto finish_word = [&] {
    if (!word.empty() && after_colon) {
      inputs.push_back(word);
    }
    word.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      finish_word();
      ++i;
    } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '#')) {
      word += text[++i];
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word += '$';
      ++i;
    } else if (c == ':' && !after_colon && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) {
      word.clear(); // the rule's target
      after_colon = true;
    } else if (c == ' ' || c == '\t') {
      finish_word();
    } else if (c == '\n') {
      finish_word();
      after_colon = false; // a new rule: "in:" phony lines have no inputs
    } else {
      word += c;
    }
  }
  finish_word();
  return inputs;
}

std::vector<std::string>
collect_link_inputs(const std::vector<std::string>& command,
                    const std::string& depfile,
                    const std::string& output,
                    const std::string& build_dir,
                    bool is_link)
{
  std::vector<std::string> candidates;
  std::string text;
  if (!depfile.empty()) {
    std::ifstream in(depfile, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!text.empty()) {
    candidates = parse_depfile(text);
  } else if (is_link) {
    for (size_t i = 1; i < command.size(); ++i) {
      const std::string& argument = command[i];
      if (argument == "-o") {
        ++i; // the output
      } else if (!argument.starts_with("-") && looks_like_library(argument)) {
        candidates.push_back(argument);
      }
    }
  }
  const std::string build_prefix = build_dir + "/";
  std::vector<std::string> inputs;
  std::set<std::string> seen{output};
  for (const auto& candidate : candidates) {
    std::string path = absolute(candidate);
    if (is_object_file(path) && path.starts_with(build_prefix)) {
      continue;
    }
    if (!is_regular_file(path) || !seen.insert(path).second) {
      continue;
    }
    inputs.push_back(std::move(path));
  }
  return inputs;
}

Expected<TargetSettings>
load_target_settings(const std::string& dir, const std::string& target, const std::string& output)
{
  TargetSettings settings;
  std::error_code error;
  const fs::path target_dir = fs::path(dir) / target;
  if (!fs::is_directory(target_dir, error)) {
    return settings;
  }
  for (const auto& entry : fs::directory_iterator(target_dir, error)) {
    if (entry.path().extension() != ".args") {
      continue;
    }
    std::ifstream in(entry.path());
    TargetSettings candidate;
    std::string file_output;
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("output=")) {
        file_output = line.substr(7);
      } else if (line.starts_with("consumes=") && line.size() > 9) {
        candidate.consumes.push_back(line.substr(9));
      } else if (line.starts_with("produces=") && line.size() > 9) {
        candidate.produces.push_back(line.substr(9));
      }
    }
    if (absolute(file_output) == output) {
      return candidate;
    }
  }
  if (error) {
    return make_error(target_dir.string(), error.message());
  }
  return settings;
}

} // namespace fingerprint::core
