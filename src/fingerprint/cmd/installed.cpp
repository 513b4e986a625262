#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/util/text.hpp>

#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sys/stat.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "the project being installed; required"},
  {"build-dir", OptionKind::value, "D", "the build tree the files were installed from; required"},
  {"source-dir", OptionKind::value, "DIR", "the project's source tree, where installed copies of sources are found"},
  {"version", OptionKind::value, "V", "the project's version"},
  {"required", OptionKind::flag, {}, "exit 1 when recording fails (else warn and exit 0)"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
};

struct Origins
{
  std::map<std::string, store::Event> by_name;   // newest per file name
  std::map<std::string, store::Event> by_digest; // every digest produced
};

// What build tree D produced. An installed file is matched to its origin by
// its bytes when they are unchanged (this also tells two configurations'
// same-named files apart), else by name: install() keeps names, and CMake's
// RPATH rewrite changes the bytes.
Expected<Origins>
produced_origins(const store::Store& store, const std::string& project, const std::string& build_dir)
{
  Origins origins;
  std::vector<store::LogProblem> ignored; // recording must not stop at a bad line
  auto ok = query::for_each_indexed_event(
    store,
    [&](store::Event& event) {
      if (event.event == store::EventKind::produced && event.build_dir == build_dir) {
        origins.by_digest[event.digest] = event;
        query::keep_newest(origins.by_name, base_name(event.path), event);
      }
    },
    ignored,
    project);
  if (!ok) {
    return ok.error();
  }
  return origins;
}

// Every regular file below `roots`, by name, for finding what an installed
// copy was copied from; the build system's own files are left out.
std::multimap<std::string, std::string>
files_by_name(const std::vector<std::string>& roots, const std::set<std::string>& skip)
{
  namespace fs = std::filesystem;
  std::multimap<std::string, std::string> found;
  for (const auto& root : roots) {
    std::error_code error;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, error);
    for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (it->is_directory(error)) {
        if (name == ".git" || name == "CMakeFiles" || skip.count(it->path().string()) != 0) {
          it.disable_recursion_pending();
        }
        continue;
      }
      if (it->is_regular_file(error) && !it->is_symlink(error)) {
        found.emplace(name, it->path().string());
      }
    }
  }
  return found;
}

Expected<size_t>
record_installed(const Args& args, store::Store::Warnings& warnings)
{
  auto algorithm = algorithm_option(args);
  if (!algorithm) {
    return algorithm.error();
  }
  auto root = store_path(args);
  if (!root) {
    return root.error();
  }
  const std::string project = *args.value("project");
  const std::string build_dir = absolute_path(*args.value("build-dir"));
  auto opened = store::open_store(*root, store::Access::write);
  if (!opened) {
    return opened.error();
  }
  const auto& store = *opened;
  auto origins = produced_origins(*store, project, build_dir);
  if (!origins) {
    return origins.error();
  }
  // Symbolic links (libfoo.so -> libfoo.so.1) name the same bytes as
  // their target, which is installed too.
  std::vector<std::string> files;
  std::vector<const store::Event*> from;
  for (const auto& argument : args.positional()) {
    struct stat st
    {};
    const std::string path = absolute_path(argument);
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    auto it = origins->by_name.find(base_name(path));
    files.push_back(path);
    from.push_back(it != origins->by_name.end() ? &it->second : nullptr);
  }
  digest::DigestOptions options;
  options.algorithm = *algorithm;
  auto digests = digest::digest_files(files, options);
  const std::string prefix = std::string(digest::algorithm_name(*algorithm)) + ":";
  const std::string time = util::format_rfc3339(util::now_ns());

  // Files no build step produced (headers, package files, data) are
  // installed by the project as they are: each is linked to the source or
  // build-tree file of the same name and bytes it was copied from. They
  // belong to the tree's newest build, or to this install when it built
  // nothing (a header-only library).
  std::string newest_build;
  std::string newest_time;
  for (const auto& [name, event] : origins->by_name) {
    if (event.time > newest_time) {
      newest_time = event.time;
      newest_build = event.build;
    }
  }
  std::optional<std::multimap<std::string, std::string>> candidates;
  digest::Hasher hasher(*algorithm);
  auto copied_from = [&](const std::string& path, const digest::FileDigest& digest) -> std::string {
    if (!candidates) {
      std::vector<std::string> roots;
      if (auto source_dir = args.value("source-dir")) {
        roots.push_back(absolute_path(*source_dir));
      }
      roots.push_back(build_dir);
      std::set<std::string> skip;
      for (const auto& file : files) {
        skip.insert(std::filesystem::path(file).parent_path().string()); // an install prefix inside a tree
      }
      candidates = files_by_name(roots, skip);
    }
    auto [begin, end] = candidates->equal_range(base_name(path));
    for (auto it = begin; it != end; ++it) {
      struct stat st
      {};
      if (it->second == path || ::stat(it->second.c_str(), &st) != 0
          || static_cast<uint64_t>(st.st_size) != digest.size) {
        continue;
      }
      auto candidate = digest::open_regular_file(it->second);
      if (!candidate) {
        continue;
      }
      if (auto hex = hasher.digest_open_file(*candidate); hex && *hex == digest.hex) {
        return it->second;
      }
    }
    return {};
  };

  std::vector<store::Event> events;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!digests[i]) {
      return digests[i].error();
    }
    // Its origin: a product of the same bytes; else a file of the same name
    // and bytes in the trees (a header, a data file: copied); else a
    // product of the same name (a binary whose RPATH install rewrote).
    std::string source;
    if (auto same = origins->by_digest.find(prefix + digests[i]->hex); same != origins->by_digest.end()) {
      from[i] = &same->second;
    } else if (source = copied_from(files[i], *digests[i]); !source.empty()) {
      from[i] = nullptr;
    }
    store::Event event;
    if (from[i] != nullptr) {
      event = *from[i];
      event.inputs.clear();
      event.from = from[i]->digest;
    } else {
      if (newest_build.empty()) {
        newest_build = hook::build_id_from_environment();
        if (newest_build.empty()) {
          auto counted = hook::build_id_from_invocation(build_dir);
          if (!counted) {
            return counted.error();
          }
          newest_build = *counted;
        }
      }
      event.project = project;
      event.version = args.value("version").value_or("");
      event.target = "install";
      event.build = newest_build;
      event.build_dir = build_dir;
      event.from = prefix + digests[i]->hex;
      event.source = std::move(source);
    }
    event.event = store::EventKind::installed;
    event.digest = prefix + digests[i]->hex;
    event.size = digests[i]->size;
    event.path = files[i];
    event.host = hook::host_name();
    event.time = time;
    events.push_back(std::move(event));
  }
  if (auto signed_events = hook::sign_events(events); !signed_events) {
    return Error{"nothing recorded: " + signed_events.error().message};
  }
  if (auto ok = store->append(events, &warnings); !ok) {
    return ok.error();
  }
  for (const auto& event : events) {
    if (event.digest == event.from) {
      continue; // installed unchanged: the producer event already says it all
    }
    if (auto ok = store->append_link(*store::parse_digest_key(event.from), event, &warnings); !ok) {
      return Error{ok.error().message + "; the installed copies were recorded, but the link of " + event.path
                   + " in the log of the file it came from was not (fingerprint fsck reports it, and "
                     "fsck --repair completes it)"};
    }
  }
  return events.size();
}

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  if (!args.value("project") || !args.value("build-dir")) {
    print_error(context, "installed: --project and --build-dir are required");
    return k_exit_usage;
  }
  store::Store::Warnings warnings;
  Expected<size_t> recorded = Error{};
  try {
    recorded = record_installed(args, warnings);
  } catch (const std::exception& error) {
    // Whatever the store or the files hold, an install must not fail for
    // it unless asked to.
    recorded = Error{std::string("internal error: ") + error.what()};
  }
  for (const auto& warning : warnings) {
    print_warning(context, warning);
  }
  if (!recorded) {
    if (args.flag("required")) {
      print_error(context, "installed files not fingerprinted: " + recorded.error().message);
      return k_exit_failure;
    }
    print_warning(context,
                  "installed files not fingerprinted: " + recorded.error().message
                    + " (FINGERPRINT_REQUIRED is OFF, the install goes on)");
    return k_exit_ok;
  }
  write_out(context,
            "-- Fingerprinted " + std::to_string(*recorded) + " installed file(s) of " + *args.value("project") + "\n");
  return k_exit_ok;
}

} // namespace

extern const Command k_installed_command{.name = "installed",
                                         .synopsis = "--project P --build-dir D [--required] [--] FILE...",
                                         .summary =
                                           "record installed copies of a build tree's artifacts (run at install time)",
                                         .options = k_options,
                                         .run = run};

} // namespace fingerprint::cmd
