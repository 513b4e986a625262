// export --format in-toto-link (in_toto_link.hpp). in-toto-verify rebuilds
// each link from the fields it knows (_type, name, materials, products,
// byproducts, command, environment) and checks the signature over their
// canonical JSON, so a link holds exactly those fields, and what is ours
// to add (the project, version and build; the roles of each material)
// goes in the opaque `environment` and `byproducts`.

#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/in_toto_link.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/util/text.hpp>

#include <map>
#include <set>

namespace fingerprint::cmd {

namespace {

void
append_string(std::string& out, const std::string& text)
{
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  out += '"';
}

Expected<void>
append_canonical(std::string& out, const nlohmann::json& value)
{
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      out += "null";
      return {};
    case nlohmann::json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return {};
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      out += value.dump();
      return {};
    case nlohmann::json::value_t::string:
      append_string(out, value.get_ref<const std::string&>());
      return {};
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (!first) {
          out += ',';
        }
        first = false;
        if (auto ok = append_canonical(out, item); !ok) {
          return ok;
        }
      }
      out += ']';
      return {};
    }
    case nlohmann::json::value_t::object: {
      // nlohmann::json keeps its keys in a std::map: sorted bytewise, which
      // for UTF-8 is the code point order Python's sorted() gives.
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) {
          out += ',';
        }
        first = false;
        append_string(out, key);
        out += ':';
        if (auto ok = append_canonical(out, item); !ok) {
          return ok;
        }
      }
      out += '}';
      return {};
    }
    default:
      return Error{"canonical JSON has no " + std::string(value.type_name()) + " (" + value.dump() + ")"};
  }
}

std::string
hex_of(std::string_view bytes)
{
  return util::to_hex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

// A digest as in-toto's hash dictionaries name it: {"sha256": "<hex>"}.
nlohmann::json
hash_dict(const std::string& digest)
{
  nlohmann::json dict = nlohmann::json::object();
  if (auto key = store::parse_digest_key(digest)) {
    std::string name(digest::algorithm_name(key->algorithm));
    dict[name == "blake2b512" ? "blake2b" : name] = key->hex;
  }
  return dict;
}

struct Step
{
  nlohmann::json materials = nlohmann::json::object();
  nlohmann::json products = nlohmann::json::object();
  std::map<std::string, std::set<std::string>> roles; // material path -> its roles
  std::string version;
  std::string build_dir;
  std::string host;
  std::string finished;
};

} // namespace

Expected<std::string>
canonical_json(const nlohmann::json& value)
{
  std::string out;
  if (auto ok = append_canonical(out, value); !ok) {
    return ok.error();
  }
  return out;
}

std::string
in_toto_key_id(std::string_view raw_public)
{
  const nlohmann::json metadata = {{"keytype", "ed25519"},
                                   {"scheme", "ed25519"},
                                   {"keyid_hash_algorithms", {"sha256", "sha512"}},
                                   {"keyval", {{"public", hex_of(raw_public)}}}};
  // The id of the key's metadata, which canonical_json() always encodes.
  return digest::key_id(*canonical_json(metadata));
}

Expected<std::vector<InTotoLink>>
in_toto_links(const store::BuildRef& ref, const std::vector<store::Event>& events, const digest::SigningKey& key)
{
  std::map<std::string, Step> steps; // by target
  for (const store::Event& event : events) {
    Step& step = steps[event.target];
    const std::string path = display_path(event.path);
    switch (event.event) {
      case store::EventKind::produced:
        step.products[path] = hash_dict(event.digest);
        break;
      case store::EventKind::installed:
        // The copy is a product of the step that made the file; a file
        // copied from the source tree is a material of the install step.
        step.products[path] = hash_dict(event.digest);
        if (!event.source.empty()) {
          step.materials[display_path(event.source)] = hash_dict(event.digest);
        }
        break;
      case store::EventKind::consumed:
        step.materials[path] = hash_dict(event.digest);
        step.roles[path].insert(query::role_of(event));
        break;
    }
    step.version = event.version;
    step.build_dir = display_path(event.build_dir);
    step.host = event.host;
    step.finished = std::max(step.finished, event.time);
  }

  const std::string keyid = in_toto_key_id(key.raw_public());
  std::vector<InTotoLink> links;
  for (auto& [target, step] : steps) {
    nlohmann::json roles = nlohmann::json::object();
    for (const auto& [path, names] : step.roles) {
      roles[path] = names;
    }
    nlohmann::json environment = {{"project", ref.project},
                                  {"build", ref.build},
                                  {"target", target},
                                  {"build_dir", step.build_dir},
                                  {"host", step.host},
                                  {"finished", step.finished}};
    if (!step.version.empty()) {
      environment["version"] = step.version;
    }
    InTotoLink link;
    link.name = ref.project + "." + target;
    nlohmann::json signed_part = {{"_type", "link"},
                                  {"name", link.name},
                                  {"materials", std::move(step.materials)},
                                  {"products", std::move(step.products)},
                                  {"byproducts", {{"roles", std::move(roles)}}},
                                  {"command", nlohmann::json::array()},
                                  {"environment", std::move(environment)}};
    auto canonical = canonical_json(signed_part);
    if (!canonical) {
      return canonical.error();
    }
    auto signature = key.sign(*canonical);
    if (!signature) {
      return signature.error();
    }
    link.metablock = {{"signatures", {{{"keyid", keyid}, {"sig", hex_of(*signature)}}}},
                      {"signed", std::move(signed_part)}};
    link.file_name = link.name + "." + keyid.substr(0, 8) + ".link";
    links.push_back(std::move(link));
  }
  return links;
}

} // namespace fingerprint::cmd
