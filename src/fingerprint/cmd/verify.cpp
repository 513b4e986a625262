#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <map>
#include <set>
#include <sys/stat.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"json", OptionKind::flag, {}, "print a JSON array, one object per file"},
  {"build-dir", OptionKind::value, "D", "verify everything recorded as produced in build tree D"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
  {"signatures",
   OptionKind::flag,
   {},
   "check that each FILE's recorded producer is signed by a trusted key, and that no event naming it is invalid"},
  k_trusted_keys_option,
};

struct Verdict
{
  std::string path;
  std::string status; // OK, MODIFIED, MISSING, NOT RECORDED, UNREADABLE
  std::string digest; // what the file holds now
  std::optional<store::Event> recorded;
  std::string error;
};

// The newest event per path in the build index; with `build_dir`, only what
// that build tree produced or installed. Otherwise, of `wanted` (absolute
// paths), also what a product's input manifest recorded them as: a file
// that was only consumed is recorded there, as it was once by a consumed
// event in the index.
Expected<std::map<std::string, store::Event>>
latest_by_path(const store::Store& store,
               const std::optional<std::string>& build_dir,
               const std::set<std::string>& wanted,
               Context& context)
{
  std::map<std::string, store::Event> latest;
  std::vector<store::LogProblem> problems;
  query::ManifestInputs manifests(store);
  auto ok = query::for_each_indexed_event(
    store,
    [&](store::Event& event) {
      if (!build_dir || (event.build_dir == *build_dir && event.event != store::EventKind::consumed)) {
        query::keep_newest(latest, event.path, event);
      }
      if (!build_dir && !event.inputs.empty()) {
        for (const store::Event& input : manifests.of(event, problems)) {
          if (wanted.contains(input.path)) {
            query::keep_newest(latest, input.path, input);
          }
        }
      }
    },
    problems);
  report_problems(context, store.location(), problems);
  if (!ok) {
    return ok.error();
  }
  return latest;
}

nlohmann::ordered_json
to_json(const Verdict& verdict)
{
  nlohmann::ordered_json object;
  put_path(object, "path", verdict.path);
  object["status"] = verdict.status;
  object["digest"] = verdict.digest.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(verdict.digest);
  object["recorded"] = verdict.recorded ? edge_json(*verdict.recorded) : nlohmann::ordered_json();
  if (!verdict.error.empty()) {
    object["error"] = verdict.error;
  }
  return object;
}

// verify --signatures FILE...: per file, its record's signatures. "valid":
// a producer (a build's `produced` event, or an install's) signed by a
// trusted key, and no event naming the bytes invalid; else the worst found.
int
run_signatures(const Args& args, Context& context, Prepared& prepared)
{
  int status = k_exit_ok;
  auto array = nlohmann::ordered_json::array();
  std::string text;
  for (const auto& file : args.positional()) {
    nlohmann::ordered_json item;
    put_path(item, "path", absolute_path(file));
    auto key = resolve_artifact(*prepared.store, file, prepared.algorithm);
    auto record = key ? store::load_record(*prepared.store, *key) : Expected<store::ArtifactRecord>(key.error());
    std::string verdict;
    std::string detail;
    if (!record) {
      verdict = "unreadable";
      detail = record.error().message;
    } else if (!record->recorded()) {
      verdict = "not recorded";
      detail = key->str();
    } else {
      item["digest"] = key->str();
      item["producers"] = nlohmann::ordered_json::array();
      const store::Event* signed_by = nullptr;
      const store::Event* invalid = nullptr;
      for (const auto* events : {&record->producers, &record->consumers}) {
        for (const store::Event& event : *events) {
          const std::string_view state = signature_status(event);
          if (state == "invalid" && invalid == nullptr) {
            invalid = &event;
          }
          if (events == &record->producers) {
            item["producers"].push_back(edge_json(event));
            if (state == "valid" && signed_by == nullptr) {
              signed_by = &event;
            }
          }
        }
      }
      auto who = [](const store::Event& event) { return event.project + "/" + event.target + " build " + event.build; };
      if (invalid != nullptr) {
        verdict = "invalid";
        detail = "the " + std::string(store::event_kind_name(invalid->event)) + " event of " + who(*invalid)
                 + " was changed after it was signed";
      } else if (signed_by != nullptr) {
        verdict = "valid";
        detail = "produced by " + who(*signed_by) + ", signed by key "
                 + signature_json(*signed_by)["key"].get<std::string>().substr(0, 16);
      } else {
        bool any_signed = false;
        for (const store::Event& event : record->producers) {
          any_signed = any_signed || signature_status(event) == "untrusted";
        }
        verdict = any_signed ? "untrusted" : "unsigned";
        detail = any_signed ? "no producer is signed by a trusted key (" + trusted_keys().directory + ")"
                            : "no producer is signed";
      }
    }
    item["status"] = verdict;
    item["detail"] = detail;
    array.push_back(std::move(item));
    if (verdict != "valid") {
      status = k_exit_failure;
    }
    text += display_path(file) + ": " + verdict + " (" + display_path(detail) + ")\n";
  }
  for (const auto& problem : trusted_keys().problems) {
    print_warning(context, problem);
  }
  write_out(context, args.flag("json") ? dump_json(array) : text);
  return status;
}

int
validate(const Args& args, Context& context)
{
  if (args.flag("signatures") && (args.positional().empty() || args.value("build-dir"))) {
    print_error(context, "verify: --signatures takes FILE|DIGEST..., not --build-dir");
    return k_exit_usage;
  }
  if (args.value("build-dir").has_value() == !args.positional().empty()) {
    print_error(context, "verify: give FILE... or --build-dir D, not both or neither");
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  if (args.flag("signatures")) {
    return run_signatures(args, context, prepared);
  }
  const auto build_dir = args.value("build-dir");
  int status = k_exit_ok;
  const std::optional<std::string> tree = build_dir ? std::optional(absolute_path(*build_dir)) : std::nullopt;
  std::set<std::string> wanted;
  for (const auto& file : args.positional()) {
    wanted.insert(absolute_path(file));
  }
  auto latest = latest_by_path(*prepared.store, tree, wanted, context);
  if (!latest) {
    print_error(context, latest.error().message);
    return k_exit_failure;
  }

  std::vector<Verdict> verdicts;
  if (tree) {
    for (const auto& [path, event] : *latest) {
      verdicts.push_back({path, "", "", event, ""});
    }
  } else {
    for (const auto& file : args.positional()) {
      Verdict verdict{file, "", "", std::nullopt, ""};
      if (auto it = latest->find(absolute_path(file)); it != latest->end()) {
        verdict.recorded = it->second;
      }
      verdicts.push_back(std::move(verdict));
    }
  }

  // The bytes are always read: verify is the check that trusts no cache.
  // Each file is digested with the algorithm its record used (a store may
  // hold sha512 records), else with --algorithm.
  std::vector<digest::Algorithm> algorithms;
  std::map<digest::Algorithm, std::vector<size_t>> by_algorithm;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    digest::Algorithm algorithm_i = prepared.algorithm;
    if (verdicts[i].recorded) {
      if (auto key = store::parse_digest_key(verdicts[i].recorded->digest)) {
        algorithm_i = key->algorithm;
      }
    }
    algorithms.push_back(algorithm_i);
    by_algorithm[algorithm_i].push_back(i);
  }
  std::vector<std::optional<Expected<digest::FileDigest>>> digests(verdicts.size());
  for (const auto& [algorithm_group, indexes] : by_algorithm) {
    std::vector<std::string> paths;
    for (const size_t i : indexes) {
      paths.push_back(verdicts[i].path);
    }
    digest::DigestOptions options;
    options.algorithm = algorithm_group;
    auto results = digest::digest_files(paths, options);
    for (size_t k = 0; k < indexes.size(); ++k) {
      digests[indexes[k]].emplace(std::move(results[k]));
    }
  }

  for (size_t i = 0; i < verdicts.size(); ++i) {
    Verdict& verdict = verdicts[i];
    const auto& file = *digests[i];
    const std::string prefix = std::string(digest::algorithm_name(algorithms[i])) + ":";
    if (!file) {
      struct stat st
      {};
      const bool missing = ::lstat(verdict.path.c_str(), &st) != 0;
      verdict.status = missing ? "MISSING" : "UNREADABLE";
      verdict.error = file.error().message;
    } else {
      verdict.digest = prefix + file->hex;
      if (verdict.recorded) {
        verdict.status = verdict.recorded->digest == verdict.digest ? "OK" : "MODIFIED";
      } else {
        // Not recorded under this path; the bytes may still be known.
        auto record = store::load_record(*prepared.store, store::DigestKey{algorithms[i], file->hex});
        verdict.status = record && record->recorded() ? "OK" : "NOT RECORDED";
      }
    }
    if (verdict.status != "OK") {
      status = k_exit_failure;
    }
  }

  if (args.flag("json")) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& verdict : verdicts) {
      array.push_back(to_json(verdict));
    }
    write_out(context, dump_json(array));
    return status;
  }
  std::string text;
  const bool colour = use_colour(context.out);
  for (const auto& verdict : verdicts) {
    const std::string_view sgr = verdict.status == "OK" ? "32" : verdict.status == "NOT RECORDED" ? "33" : "31";
    text += display_path(verdict.path) + ": " + paint(verdict.status, sgr, colour);
    if (verdict.status == "MODIFIED") {
      text += " (recorded " + verdict.recorded->digest + " by " + verdict.recorded->project + "/"
              + verdict.recorded->target + " build " + verdict.recorded->build + ")";
    } else if (!verdict.error.empty()) {
      text += " (" + display_path(verdict.error) + ")"; // it names the file
    }
    text += "\n";
  }
  if (verdicts.empty()) {
    text = "nothing recorded for build tree " + display_path(*tree) + "\n";
    status = k_exit_failure;
  }
  write_out(context, text);
  return status;
}

} // namespace

extern const Command k_verify_command{.name = "verify",
                                      .synopsis = "[--json] FILE... | [--json] --build-dir D",
                                      .summary = "check that files still hold the bytes the store recorded for them",
                                      .options = k_options,
                                      .run = run,
                                      .needs = Needs::store,
                                      .validate = validate};

} // namespace fingerprint::cmd
