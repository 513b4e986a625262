// history FILE: every version seen at a path, oldest first, with the build
// that produced (or installed) each and who consumed each.

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/query/history.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <algorithm>
#include <sys/stat.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print one JSON object"},
  {"algorithm", OptionKind::value, "A", "digest the file at the path now with A (default sha256)"},
};

int
validate(const Args& args, Context& context)
{
  if (store::looks_like_digest_key(args.positional().front())) {
    print_error(context, "history: give a FILE (its path's versions are listed), not a digest");
    return k_exit_usage;
  }
  return k_exit_ok;
}

std::string
who(const store::Event& event)
{
  std::string text = event.project;
  if (!event.version.empty()) {
    text += " " + event.version;
  }
  return text + " " + event.target + ", build " + event.build;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const std::string file = absolute_path(args.positional().front());
  std::string path = file;
  std::vector<store::LogProblem> problems;
  auto versions = query::versions_at(*prepared.store, query::spellings_of(path), problems);
  if (!versions) {
    print_error(context, versions.error().message);
    return k_exit_failure;
  }
  // The version at the path now, when there is a file there.
  std::string now;
  struct stat st
  {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    digest::Hasher hasher(prepared.algorithm);
    const digest::DigestCache cache(digest::DigestCache::default_directory());
    if (auto digest = digest::digest_path(hasher, path, &cache)) {
      now = store::DigestKey{prepared.algorithm, digest->hex}.str();
    }
  }
  // Nothing recorded at this path, and the file is a stripped or split copy
  // of a product: that product's path's history, the copy's bytes as "now".
  std::optional<BuildIdMatch> match;
  if (versions->empty() && !now.empty()) {
    match = match_by_build_id(*prepared.store, file, *store::parse_digest_key(now), context);
    if (match) {
      path = match->product.path;
      versions = query::versions_at(*prepared.store, query::spellings_of(path), problems);
      if (!versions) {
        print_error(context, versions.error().message);
        return k_exit_failure;
      }
    }
  }
  std::vector<store::ArtifactRecord> records;
  for (const query::Version& version : *versions) {
    auto key = store::parse_digest_key(version.digest);
    if (!key) {
      continue;
    }
    auto record = store::load_record(*prepared.store, *key);
    if (!record) {
      print_error(context, record.error().message);
      return k_exit_failure;
    }
    problems.insert(problems.end(), record->problems.begin(), record->problems.end());
    records.push_back(std::move(*record));
  }
  report_problems(context, prepared.store->location(), problems);
  // The version the file there now is, or is a copy of.
  const std::string current = match ? match->product.digest : now;
  if (versions->empty()) {
    print_error(context,
                display_path(path) + ": no version of it is recorded in the store " + prepared.store->location());
    return k_exit_failure;
  }

  if (args.flag("json")) {
    nlohmann::ordered_json out;
    out["path"] = path;
    out["now"] = now.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(now);
    if (match) {
      // `path` is the product's; `now` the copy's bytes.
      out["matched_by_build_id"] = {
        {"file", file}, {"build_id", match->build_id}, {"digest", now}, {"product", match->product.digest}};
    }
    out["versions"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < versions->size(); ++i) {
      const query::Version& version = (*versions)[i];
      nlohmann::ordered_json item;
      item["digest"] = version.digest;
      item["size"] = records[i].size;
      item["first_seen"] = version.first_seen;
      item["current"] = version.digest == current;
      item["producers"] = nlohmann::ordered_json::array();
      for (const store::Event& event : version.makers) {
        item["producers"].push_back(edge_json(event));
      }
      item["consumers"] = nlohmann::ordered_json::array();
      for (const store::Event& event : records[i].consumers) {
        item["consumers"].push_back(edge_json(event));
      }
      out["versions"].push_back(std::move(item));
    }
    write_out(context, dump_json(out));
    return k_exit_ok;
  }
  std::string text = display_path(path) + ": " + std::to_string(versions->size())
                     + (versions->size() == 1 ? " version" : " versions") + ", oldest first"
                     + (match ? " (" + display_path(file) + " is a stripped or split copy of its version "
                                  + match->product.digest.substr(0, 19) + ", matched by build-id)"
                              : std::string())
                     + "\n";
  for (size_t i = 0; i < versions->size(); ++i) {
    const query::Version& version = (*versions)[i];
    text += "\n" + std::to_string(i + 1) + ". " + version.digest.substr(0, 19) + "  " + std::to_string(records[i].size)
            + " bytes, first seen " + human_time(version.first_seen)
            + (version.digest == current ? "  (the file there now)" : "") + "\n";
    for (const store::Event& event : version.makers) {
      text += std::string("   ") + (event.event == store::EventKind::installed ? "installed" : "produced") + " by "
              + who(event) + "\n";
    }
    if (version.makers.empty()) {
      text += "   no recorded build produced it\n";
    }
    if (records[i].consumers.empty()) {
      text += "   consumed by nobody recorded\n";
    }
    for (const store::Event& event : records[i].consumers) {
      text += "   consumed by " + who(event) + " (" + query::role_of(event) + ")\n";
    }
  }
  if (!current.empty() && std::none_of(versions->begin(), versions->end(), [&](const query::Version& v) {
        return v.digest == current;
      })) {
    text += "\nthe file there now (" + now.substr(0, 19) + "...) is none of them: not recorded\n";
  }
  write_out(context, text);
  return k_exit_ok;
}

} // namespace

extern const Command k_history_command{.name = "history",
                                       .synopsis = "[--json] FILE",
                                       .summary = "every version seen at a path, oldest first, with its producer "
                                                  "and its consumers",
                                       .options = k_options,
                                       .run = run,
                                       .needs = Needs::store,
                                       .arity = {1, 1, "give exactly one FILE"},
                                       .validate = validate};

} // namespace fingerprint::cmd
