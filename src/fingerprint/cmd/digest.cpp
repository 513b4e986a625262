#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/engine.hpp>

#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"algorithm", OptionKind::value, "A", "sha256 (default), sha512, sha1, md5 or blake2b512"},
  {"jobs", OptionKind::value, "N", "digest N files at once (default: all cores)"},
};

// One output line exactly as sha256sum writes it: a name holding a
// backslash, newline or carriage return is escaped and the line starts with
// a backslash, so `sha256sum -c` reads it back.
std::string
checksum_line(const std::string& hex, const std::string& name)
{
  const bool escape = name.find_first_of("\\\n\r") != std::string::npos;
  std::string line;
  line.reserve(hex.size() + name.size() + 4);
  if (escape) {
    line += '\\';
  }
  line += hex;
  line += "  ";
  for (const char c : name) {
    if (escape && c == '\\') {
      line += "\\\\";
    } else if (escape && c == '\n') {
      line += "\\n";
    } else if (escape && c == '\r') {
      line += "\\r";
    } else {
      line += c;
    }
  }
  line += '\n';
  return line;
}

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  auto algorithm = algorithm_option(args);
  if (!algorithm) {
    print_error(context, "digest: " + algorithm.error().message);
    return k_exit_usage;
  }
  digest::DigestOptions options;
  options.algorithm = *algorithm;
  if (auto jobs = args.value("jobs")) {
    char* end = nullptr;
    const long value = std::strtol(jobs->c_str(), &end, 10);
    if (end == jobs->c_str() || *end != '\0' || value < 1 || value > 1024) {
      print_error(context, "digest: --jobs: '" + *jobs + "' is not a number from 1 to 1024");
      return k_exit_usage;
    }
    options.jobs = static_cast<unsigned>(value);
  }
  const auto& files = args.positional();
  if (files.empty()) {
    print_error(context, "digest: no files given");
    return k_exit_usage;
  }
  // "-" is standard input, as for sha256sum; it is read on this thread.
  std::vector<std::string> paths;
  for (const auto& file : files) {
    if (file != "-") {
      paths.push_back(file);
    }
  }
  auto results = digest::digest_files(paths, options);
  int status = k_exit_ok;
  size_t next = 0;
  std::string output;
  for (const auto& file : files) {
    Expected<std::string> hex = Error{};
    if (file == "-") {
      digest::Hasher hasher(*algorithm);
      hex = hasher.digest_stream(STDIN_FILENO, nullptr);
      if (!hex) {
        hex = make_error("-", hex.error().message);
      }
    } else {
      auto& result = results[next++];
      hex = result ? Expected<std::string>(std::move(result->hex)) : Expected<std::string>(result.error());
    }
    if (hex) {
      output += checksum_line(*hex, file);
    } else {
      write_out(context, output);
      output.clear();
      print_error(context, hex.error().message);
      status = k_exit_failure;
    }
  }
  write_out(context, output);
  return status;
}

} // namespace

extern const Command k_digest_command{.name = "digest",
                                      .synopsis = "[--algorithm A] [--jobs N] FILE...",
                                      .summary = "print each file's digest, as sha256sum does",
                                      .options = k_options,
                                      .run = run};

} // namespace fingerprint::cmd
