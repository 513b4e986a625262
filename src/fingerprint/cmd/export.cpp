// export --format in-toto: a build's provenance as an in-toto Statement v1
// whose predicate is SLSA Provenance v1. Its materials are what its
// products' input manifests list (and an old store's consumed events),
// with the source commit and the compilers of the build's provenance.
// export --format cyclonedx: the same build's bill of materials (sbom.hpp).
// export --format in-toto-link: the same build as signed in-toto links, one
// per target (in_toto_link.hpp), written to files.

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/in_toto_link.hpp>
#include <fingerprint/cmd/sbom.hpp>
#include <fingerprint/digest/signing.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"format",
   OptionKind::value,
   "F",
   "in-toto (an in-toto Statement v1 with SLSA Provenance v1), cyclonedx (a CycloneDX 1.5 JSON BOM) or "
   "in-toto-link (signed in-toto links, one per target, as in-toto-verify reads them); required"},
  {"project", OptionKind::value, "P", "with --build: export that build instead of an artifact's producer"},
  {"build", OptionKind::value, "B", "the build id, with --project"},
  {"algorithm", OptionKind::value, "A", "digest a FILE argument with A (default sha256)"},
  {"sign",
   OptionKind::flag,
   {},
   "in-toto: print the Statement in a DSSE envelope signed with the key $FINGERPRINT_SIGNING_KEY names"},
  {"output-dir",
   OptionKind::value,
   "DIR",
   "in-toto-link: write the links in DIR (default: the current directory), as <project>.<target>.<keyid>.link"},
};

// DSSE's pre-authentication encoding of `payload` of type `type`:
// "DSSEv1 <len(type)> <type> <len(payload)> <payload>", what its signatures are over.
std::string
dsse_pae(std::string_view type, std::string_view payload)
{
  return "DSSEv1 " + std::to_string(type.size()) + " " + std::string(type) + " " + std::to_string(payload.size()) + " "
         + std::string(payload);
}

constexpr std::string_view k_in_toto_payload_type = "application/vnd.in-toto+json";

// `statement` in a DSSE envelope, signed with the key at `key_path`.
Expected<nlohmann::ordered_json>
dsse_envelope(const nlohmann::ordered_json& statement, const std::string& key_path)
{
  auto key = digest::SigningKey::load(key_path);
  if (!key) {
    return Error{"$FINGERPRINT_SIGNING_KEY: " + key.error().message};
  }
  const std::string payload = statement.dump();
  auto signature = key->sign(dsse_pae(k_in_toto_payload_type, payload));
  if (!signature) {
    return signature.error();
  }
  nlohmann::ordered_json envelope;
  envelope["payloadType"] = k_in_toto_payload_type;
  envelope["payload"] = digest::base64_encode(payload);
  envelope["signatures"] = {{{"keyid", digest::key_id(key->raw_public())}, {"sig", digest::base64_encode(*signature)}}};
  return envelope;
}

// URIs that name this tool's kind of build and the machine that ran it;
// URNs, so that nothing claims a web address it does not serve.
constexpr std::string_view k_build_type = "urn:fingerprint:build-type:cmake:v1";

// A DigestSet: {"sha256": "<hex>"}, with in-toto's names for the algorithms.
nlohmann::ordered_json
digest_set(const std::string& digest)
{
  nlohmann::ordered_json set = nlohmann::ordered_json::object();
  if (auto key = store::parse_digest_key(digest)) {
    std::string name(digest::algorithm_name(key->algorithm));
    if (name == "blake2b512") {
      name = "blake2b";
    }
    set[name] = key->hex;
  }
  return set;
}

nlohmann::ordered_json
resource(const store::Event& event)
{
  return {{"name", display_path(event.path)}, {"digest", digest_set(event.digest)}};
}

// What the build's provenance (store/provenance.hpp) adds to SLSA's
// resolved dependencies: the source commit, as SLSA names one
// ("git+<url>@<commit>", its digest a gitCommit), then each compiler.
void
add_provenance_dependencies(const nlohmann::ordered_json& provenance, nlohmann::ordered_json& materials)
{
  const auto source = provenance.find("source");
  if (source != provenance.end() && source->is_object() && !store::json_text(*source, "commit").empty()) {
    const std::string commit = store::json_text(*source, "commit");
    std::string url = store::json_text(*source, "remote");
    if (url.empty()) {
      url = "file://" + store::json_text(provenance, "source_dir");
    }
    nlohmann::ordered_json descriptor = {
      {"uri", "git+" + url + "@" + commit}, {"digest", {{"gitCommit", commit}}}, {"name", "source"}};
    nlohmann::ordered_json annotations = nlohmann::ordered_json::object();
    if (const std::string branch = store::json_text(*source, "branch"); !branch.empty()) {
      annotations["branch"] = branch;
    }
    if (const auto dirty = source->find("dirty"); dirty != source->end() && dirty->is_boolean()) {
      annotations["dirty"] = dirty->get<bool>();
    }
    descriptor["annotations"] = annotations;
    materials.insert(materials.begin(), std::move(descriptor));
  }
  if (const auto compilers = provenance.find("compilers"); compilers != provenance.end() && compilers->is_object()) {
    for (const auto& [language, compiler] : compilers->items()) {
      materials.push_back({{"uri", "file://" + store::json_text(compiler, "path")},
                           {"name", language + " compiler"},
                           {"annotations",
                            {{"toolchain", true},
                             {"id", store::json_text(compiler, "id")},
                             {"version", store::json_text(compiler, "version")}}}});
    }
  }
}

// `installed`: the installed copies asked about, subjects too beside what
// the build produced. `provenance`: the build's, when the store has it.
nlohmann::ordered_json
statement(const store::BuildRef& ref,
          const std::vector<store::Event>& events,
          const std::vector<store::Event>& installed,
          const std::optional<nlohmann::ordered_json>& provenance)
{
  nlohmann::ordered_json subjects = nlohmann::ordered_json::array();
  std::set<std::string> seen_subjects;
  for (const store::Event& copy : installed) {
    if (seen_subjects.insert(copy.digest + copy.path).second) {
      subjects.push_back(resource(copy));
    }
  }
  // A ResourceDescriptor per file (digest and path), in the order first
  // met, with the roles it had for the build's products in its annotations
  // (in-toto's place for what a descriptor's fields do not say).
  std::vector<std::pair<const store::Event*, std::set<std::string>>> dependencies;
  std::map<std::string, size_t> dependency_at;
  std::string started;
  std::string finished;
  std::string host;
  std::string build_dir;
  std::string version;
  std::set<std::string> targets;
  for (const auto& event : events) {
    if (started.empty() || event.time < started) {
      started = event.time;
    }
    finished = std::max(finished, event.time);
    host = event.host;
    build_dir = display_path(event.build_dir);
    version = event.version;
    targets.insert(event.target);
    if (event.event == store::EventKind::produced && seen_subjects.insert(event.digest + event.path).second) {
      subjects.push_back(resource(event));
    } else if (event.event == store::EventKind::consumed) {
      auto [at, added] = dependency_at.try_emplace(event.digest + '\0' + event.path, dependencies.size());
      if (added) {
        dependencies.push_back({&event, {}});
      }
      dependencies[at->second].second.insert(query::role_of(event));
    }
  }
  nlohmann::ordered_json materials = nlohmann::ordered_json::array();
  for (const auto& [event, roles] : dependencies) {
    auto descriptor = resource(*event);
    descriptor["annotations"] = {{"roles", roles}};
    materials.push_back(std::move(descriptor));
  }
  nlohmann::ordered_json external;
  external["project"] = ref.project;
  if (!version.empty()) {
    external["version"] = version;
  }
  external["targets"] = targets;
  nlohmann::ordered_json internal;
  internal["build_dir"] = build_dir;
  if (provenance) {
    add_provenance_dependencies(*provenance, materials);
    // The toolchain and configuration the build ran with.
    for (const char* key : {"source_dir", "build_type", "cmake", "compilers", "flags", "flags_digest", "ci"}) {
      if (const auto it = provenance->find(key); it != provenance->end() && !it->is_null()) {
        internal[key] = *it;
      }
    }
  }

  nlohmann::ordered_json predicate;
  predicate["buildDefinition"] = {{"buildType", k_build_type},
                                  {"externalParameters", external},
                                  {"internalParameters", internal},
                                  {"resolvedDependencies", materials}};
  predicate["runDetails"] = {
    {"builder", {{"id", "urn:fingerprint:builder:" + host}}},
    {"metadata", {{"invocationId", ref.project + "/" + ref.build}, {"startedOn", started}, {"finishedOn", finished}}}};

  nlohmann::ordered_json out;
  out["_type"] = "https://in-toto.io/Statement/v1";
  out["subject"] = subjects;
  out["predicateType"] = "https://slsa.dev/provenance/v1";
  out["predicate"] = predicate;
  return out;
}

// The links of build `ref` (in_toto_link.hpp), each written to its file in
// `directory`, made when missing; the path of each printed.
int
write_links(const store::BuildRef& ref,
            const std::vector<store::Event>& events,
            const std::string& directory,
            Context& context)
{
  auto key = digest::SigningKey::load(std::getenv("FINGERPRINT_SIGNING_KEY"));
  if (!key) {
    print_error(context, "export: $FINGERPRINT_SIGNING_KEY: " + key.error().message);
    return k_exit_failure;
  }
  auto links = in_toto_links(ref, events, *key);
  if (!links) {
    print_error(context, "export: " + links.error().message);
    return k_exit_failure;
  }
  for (const InTotoLink& link : *links) {
    // A target named after a file in a subdirectory ("lib/table.hpp") is a
    // step whose link in-toto-verify looks for in that subdirectory.
    const std::string path = directory + "/" + link.file_name;
    const std::string parent = path.substr(0, path.rfind('/'));
    if (auto made = util::open_directory(parent, true); !made) {
      print_error(context, "export: cannot make the directory " + parent + ": " + made.error().message);
      return k_exit_failure;
    }
    if (!util::replace_file(path, link.metablock.dump(1) + "\n")) {
      print_error(context, "export: cannot write " + path + ": " + std::strerror(errno));
      return k_exit_failure;
    }
    write_out(context, path + "\n");
  }
  return k_exit_ok;
}

int
validate(const Args& args, Context& context)
{
  const auto format = args.value("format");
  if (!format || (*format != "in-toto" && *format != "cyclonedx" && *format != "in-toto-link")) {
    print_error(context, "export: --format in-toto, --format in-toto-link or --format cyclonedx is required");
    return k_exit_usage;
  }
  if (args.flag("sign") && *format != "in-toto") {
    print_error(context,
                "export: --sign signs an in-toto Statement (--format in-toto); in-toto links are always signed");
    return k_exit_usage;
  }
  if (args.value("output-dir") && *format != "in-toto-link") {
    print_error(context, "export: --output-dir is where --format in-toto-link writes its links");
    return k_exit_usage;
  }
  const bool signs = args.flag("sign") || *format == "in-toto-link";
  if (const char* key = std::getenv("FINGERPRINT_SIGNING_KEY"); signs && (key == nullptr || *key == '\0')) {
    print_error(context,
                "export: " + std::string(args.flag("sign") ? "--sign" : "--format in-toto-link")
                  + " needs FINGERPRINT_SIGNING_KEY, the PEM file of the key to sign with");
    return k_exit_usage;
  }
  const bool project = args.value("project").has_value();
  if (project != args.value("build").has_value() || project == (args.positional().size() == 1)
      || args.positional().size() > 1) {
    print_error(context,
                "export: give one FILE or DIGEST (exports the build that produced it), or --project P --build B");
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const auto project = args.value("project");
  const auto build = args.value("build");
  store::BuildRef ref;
  std::vector<store::Event> installed;
  if (project) {
    ref = {*project, *build};
  } else {
    const std::string& argument = args.positional().front();
    int failure = k_exit_failure;
    std::optional<std::pair<std::string, std::string>> matched;
    auto record = load_artifact(*prepared.store, argument, prepared.algorithm, context, failure, &matched);
    if (!record) {
      return failure;
    }
    if (matched) {
      // A stripped or split copy: a subject too, by its own digest.
      store::Event copy;
      copy.digest = matched->second;
      copy.path = absolute_path(argument);
      installed.push_back(std::move(copy));
    }
    report_problems(context, prepared.store->location(), record->problems);
    auto newest_of = [](const std::vector<store::Event>& events, store::EventKind kind) {
      const store::Event* newest = nullptr;
      for (const auto& event : events) {
        if (event.event == kind && (newest == nullptr || newest->time <= event.time)) {
          newest = &event;
        }
      }
      return newest;
    };
    const store::Event* newest = newest_of(record->producers, store::EventKind::produced);
    // An installed copy (its RPATH rewritten, or the same bytes): the build
    // that produced the file it was installed from, with the copy a subject
    // too; one installed from the source tree, the build that installed it.
    std::optional<store::ArtifactRecord> origin;
    const store::Event* install =
      newest == nullptr ? newest_of(record->producers, store::EventKind::installed) : nullptr;
    if (install != nullptr) {
      installed.push_back(*install);
      if (auto from = store::parse_digest_key(install->from); from && *from != record->key) {
        if (auto loaded = store::load_record(*prepared.store, *from)) {
          origin = std::move(*loaded);
          newest = newest_of(origin->producers, store::EventKind::produced);
        }
      }
      if (newest == nullptr) {
        newest = install;
      }
    }
    if (newest == nullptr) {
      print_error(context,
                  argument + ": no build produced it (" + record->key.str() + ") in the store "
                    + prepared.store->location());
      return k_exit_failure;
    }
    ref = {newest->project, newest->build};
  }
  auto index = read_build_index(*prepared.store, context, ref);
  if (!index) {
    return k_exit_failure;
  }
  std::vector<store::LogProblem> problems;
  query::add_manifest_inputs(*prepared.store, index->events, problems);
  report_problems(context, prepared.store->location(), problems);
  if (args.value("format") == "cyclonedx") {
    write_out(context, dump_json(cyclonedx(*prepared.store, ref, index->events, installed)));
    return k_exit_ok;
  }
  if (args.value("format") == "in-toto-link") {
    return write_links(ref, index->events, args.value("output-dir").value_or("."), context);
  }
  auto out = statement(ref, index->events, installed, build_provenance(*prepared.store, ref, context));
  if (args.flag("sign")) {
    auto envelope = dsse_envelope(out, std::getenv("FINGERPRINT_SIGNING_KEY"));
    if (!envelope) {
      print_error(context, "export: " + envelope.error().message);
      return k_exit_failure;
    }
    out = std::move(*envelope);
  }
  write_out(context, dump_json(out));
  return k_exit_ok;
}

} // namespace

extern const Command k_export_command{.name = "export",
                                      .synopsis =
                                        "--format in-toto|in-toto-link|cyclonedx FILE|DIGEST | --project P --build B",
                                      .summary = "provenance of the build that produced an artifact, as in-toto / SLSA "
                                                 "v1, or its bill of materials, as CycloneDX",
                                      .options = k_options,
                                      .run = run,
                                      .needs = Needs::store,
                                      .validate = validate};

} // namespace fingerprint::cmd
