#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/sbom.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/store/spool.hpp>
#include <fingerprint/util/text.hpp>

#include <map>
#include <set>

namespace fingerprint::cmd {

namespace {

// CycloneDX's names of the hash algorithms.
std::string
hash_algorithm(digest::Algorithm algorithm)
{
  switch (algorithm) {
    case digest::Algorithm::sha256:
      return "SHA-256";
    case digest::Algorithm::sha512:
      return "SHA-512";
    case digest::Algorithm::sha1:
      return "SHA-1";
    case digest::Algorithm::md5:
      return "MD5";
    case digest::Algorithm::blake2b512:
      return "BLAKE2b-512";
  }
  return "SHA-256";
}

nlohmann::ordered_json
hashes_of(const std::string& digest)
{
  nlohmann::ordered_json hashes = nlohmann::ordered_json::array();
  if (auto key = store::parse_digest_key(digest)) {
    hashes.push_back({{"alg", hash_algorithm(key->algorithm)}, {"content", key->hex}});
  }
  return hashes;
}

// A version 4 UUID from 32 random hex digits.
std::string
random_uuid()
{
  std::string hex = store::new_call_id();
  hex[12] = '4';
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-"
         + hex.substr(20);
}

// "pkg:deb/debian/libc6@2.36-9%2Bdeb12u7?arch=amd64" (purl-spec's deb type).
std::string
deb_purl(const query::PackageOrigin& origin)
{
  auto encoded = [](const std::string& text) {
    std::string out;
    static constexpr char k_hex[] = "0123456789ABCDEF";
    for (const unsigned char c : text) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'
          || c == '~') {
        out += static_cast<char>(c);
      } else {
        out += '%';
        out += k_hex[c >> 4];
        out += k_hex[c & 15];
      }
    }
    return out;
  };
  std::string purl = "pkg:deb/debian/" + encoded(origin.package) + "@" + encoded(origin.version);
  if (!origin.architecture.empty()) {
    purl += "?arch=" + encoded(origin.architecture);
  }
  return purl;
}

// Where a consumed file came from: its group's bom-ref and component, or
// none (a file of unknown origin stands alone).
struct Origin
{
  std::string ref;
  nlohmann::ordered_json component; // the group, without its files
  std::string producer_inputs;      // a fingerprinted product's input manifest, for the group's own dependencies
};

class Origins
{
public:
  explicit Origins(const store::Store& store)
    : m_store(store)
    , m_packages(package_index())
  {
  }

  std::optional<Origin>
  of(const std::string& digest, const std::string& path)
  {
    auto key = store::parse_digest_key(digest);
    if (!key) {
      return std::nullopt;
    }
    if (auto record = m_store.read_log(*key)) {
      const store::ArtifactRecord folded = store::fold_record(*key, std::move(*record));
      const store::Event* maker = nullptr;
      for (const store::Event& event : folded.producers) {
        if (maker == nullptr || (event.event == store::EventKind::produced && maker->event != event.event)) {
          maker = &event;
        }
      }
      if (maker != nullptr) {
        Origin origin;
        origin.ref = "project:" + maker->project + (maker->version.empty() ? "" : "@" + maker->version);
        origin.component = {{"type", "library"}, {"bom-ref", origin.ref}, {"name", maker->project}};
        if (!maker->version.empty()) {
          origin.component["version"] = maker->version;
        }
        origin.component["description"] = "built by fingerprinted project " + maker->project;
        origin.producer_inputs = maker->event == store::EventKind::produced ? maker->inputs : std::string();
        return origin;
      }
    }
    if (m_packages) {
      if (auto package = m_packages->owner(path)) {
        Origin origin;
        origin.ref = deb_purl(*package);
        origin.component = {{"type", "library"},
                            {"bom-ref", origin.ref},
                            {"name", package->package},
                            {"version", package->version},
                            {"purl", origin.ref},
                            {"description", "Debian package"}};
        return origin;
      }
    }
    return std::nullopt;
  }

private:
  const store::Store& m_store;
  std::optional<query::PackageIndex> m_packages;
};

nlohmann::ordered_json
file_component(const std::string& ref, const store::Event& event)
{
  return {{"type", "file"}, {"bom-ref", ref}, {"name", display_path(event.path)}, {"hashes", hashes_of(event.digest)}};
}

} // namespace

nlohmann::ordered_json
cyclonedx(const store::Store& store,
          const store::BuildRef& ref,
          const std::vector<store::Event>& events,
          const std::vector<store::Event>& installed)
{
  const std::string build_ref = "build:" + ref.project + "/" + ref.build;
  std::string version;
  std::string finished;
  nlohmann::ordered_json products = nlohmann::ordered_json::array();
  std::set<std::string> seen_products;
  size_t files = 0;
  auto add_product = [&](const store::Event& event) {
    if (seen_products.insert(event.digest + '\0' + event.path).second) {
      products.push_back(file_component("file-" + std::to_string(++files), event));
    }
  };
  for (const store::Event& copy : installed) {
    add_product(copy);
  }
  for (const store::Event& event : events) {
    version = event.version.empty() ? version : event.version;
    finished = std::max(finished, event.time);
    if (event.event == store::EventKind::produced) {
      add_product(event);
    }
  }

  // What was consumed, grouped by origin, in the order first met.
  Origins origins(store);
  std::vector<std::string> group_order;
  std::map<std::string, nlohmann::ordered_json> groups;
  std::map<std::string, std::string> group_inputs; // group ref -> an input manifest of its products
  std::map<std::string, std::string> group_of;     // consumed digest -> its group's ref ("" alone)
  nlohmann::ordered_json alone = nlohmann::ordered_json::array();
  std::vector<std::string> depends_on;
  std::set<std::string> seen_inputs;
  for (const store::Event& event : events) {
    if (event.event != store::EventKind::consumed || !seen_inputs.insert(event.digest + '\0' + event.path).second) {
      continue;
    }
    const std::string file_ref = "file-" + std::to_string(++files);
    auto origin = origins.of(event.digest, event.path);
    if (!origin) {
      alone.push_back(file_component(file_ref, event));
      depends_on.push_back(file_ref);
      group_of.emplace(event.digest, "");
      continue;
    }
    auto [group, added] = groups.try_emplace(origin->ref, origin->component);
    if (added) {
      group_order.push_back(origin->ref);
      depends_on.push_back(origin->ref);
      group->second["components"] = nlohmann::ordered_json::array();
    }
    if (!origin->producer_inputs.empty()) {
      group_inputs.try_emplace(origin->ref, origin->producer_inputs);
    }
    group->second["components"].push_back(file_component(file_ref, event));
    group_of.emplace(event.digest, origin->ref);
  }

  nlohmann::ordered_json bom;
  bom["bomFormat"] = "CycloneDX";
  bom["specVersion"] = "1.5";
  bom["serialNumber"] = "urn:uuid:" + random_uuid();
  bom["version"] = 1;
  nlohmann::ordered_json component = {{"type", "application"}, {"bom-ref", build_ref}, {"name", ref.project}};
  if (!version.empty()) {
    component["version"] = version;
  }
  component["description"] = "build " + ref.build + " of " + ref.project;
  component["components"] = products;
  nlohmann::ordered_json tools = {{{"type", "application"}, {"name", "fingerprint"}, {"version", FINGERPRINT_VERSION}}};
  nlohmann::ordered_json properties = nlohmann::ordered_json::array();
  // The build's provenance (store/provenance.hpp): its source commit, and
  // the toolchain as the tools that made it.
  const auto document = store.read_provenance(ref);
  const nlohmann::ordered_json provenance =
    document && *document ? nlohmann::ordered_json::parse(**document, nullptr, false) : nlohmann::ordered_json();
  if (provenance.is_object()) {
    if (const auto source = provenance.find("source"); source != provenance.end() && source->is_object()) {
      const std::string commit = store::json_text(*source, "commit");
      const std::string remote = store::json_text(*source, "remote");
      if (!commit.empty() && !remote.empty()) {
        component["externalReferences"] = {{{"type", "vcs"}, {"url", remote}, {"comment", "git commit " + commit}}};
      }
      if (!commit.empty()) {
        properties.push_back({{"name", "fingerprint:git:commit"}, {"value", commit}});
      }
      if (const auto dirty = source->find("dirty"); dirty != source->end() && dirty->is_boolean()) {
        properties.push_back({{"name", "fingerprint:git:dirty"}, {"value", dirty->get<bool>() ? "true" : "false"}});
      }
    }
    if (const auto cmake = provenance.find("cmake"); cmake != provenance.end() && cmake->is_object()) {
      tools.push_back({{"type", "application"}, {"name", "cmake"}, {"version", store::json_text(*cmake, "version")}});
    }
    if (const auto compilers = provenance.find("compilers"); compilers != provenance.end() && compilers->is_object()) {
      for (const auto& [language, compiler] : compilers->items()) {
        tools.push_back({{"type", "application"},
                         {"name", store::json_text(compiler, "id") + " " + language + " compiler"},
                         {"version", store::json_text(compiler, "version")}});
      }
    }
    for (const char* key : {"build_type", "flags_digest"}) {
      if (const std::string value = store::json_text(provenance, key); !value.empty()) {
        properties.push_back({{"name", std::string("fingerprint:") + key}, {"value", value}});
      }
    }
  }
  bom["metadata"] = {
    {"timestamp", util::format_rfc3339(util::now_ns())}, {"tools", {{"components", tools}}}, {"component", component}};
  if (!properties.empty()) {
    bom["metadata"]["properties"] = properties;
  }
  nlohmann::ordered_json components = nlohmann::ordered_json::array();
  for (const std::string& group : group_order) {
    components.push_back(groups[group]);
  }
  for (auto& file : alone) {
    components.push_back(std::move(file));
  }
  bom["components"] = components;

  // The build on what it consumed; a fingerprinted project on the groups
  // here that its products' input manifest lists.
  nlohmann::ordered_json dependencies = nlohmann::ordered_json::array();
  dependencies.push_back({{"ref", build_ref}, {"dependsOn", depends_on}});
  for (const std::string& group : group_order) {
    std::vector<std::string> on;
    if (auto inputs = group_inputs.find(group); inputs != group_inputs.end()) {
      if (auto key = store::parse_digest_key(inputs->second)) {
        if (auto manifest = store.read_manifest(*key); manifest && *manifest) {
          std::set<std::string> added;
          for (const store::ManifestEntry& entry : (*manifest)->entries) {
            auto it = group_of.find(store::DigestKey{key->algorithm, entry.hex}.str());
            if (it != group_of.end() && !it->second.empty() && it->second != group && added.insert(it->second).second) {
              on.push_back(it->second);
            }
          }
        }
      }
    }
    dependencies.push_back({{"ref", group}, {"dependsOn", on}});
  }
  bom["dependencies"] = dependencies;
  return bom;
}

} // namespace fingerprint::cmd
