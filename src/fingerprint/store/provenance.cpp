#include <fingerprint/store/provenance.hpp>

namespace fingerprint::store {

namespace {

std::string
text_at(const nlohmann::json& object, const char* key)
{
  if (!object.is_object()) {
    return {};
  }
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace

Expected<nlohmann::json>
parse_provenance(std::string_view text, const BuildRef& build, const std::string& where)
{
  nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    return make_error(where, "not a build provenance document (a JSON object)");
  }
  const auto version = document.find("provenance");
  if (version == document.end() || !version->is_number_integer()) {
    return make_error(where, "not a build provenance document (no \"provenance\" version)");
  }
  if (version->get<long long>() > k_provenance_version) {
    return make_error(where,
                      "build provenance of version " + std::to_string(version->get<long long>())
                        + ", newer than this fingerprint understands (" + std::to_string(k_provenance_version) + ")");
  }
  if (text_at(document, "project") != build.project || text_at(document, "build") != build.build) {
    return make_error(where,
                      "the build provenance of " + text_at(document, "project") + " " + text_at(document, "build")
                        + ", not of " + build.project + " " + build.build);
  }
  return document;
}

std::string
provenance_summary(const nlohmann::json& document)
{
  std::string summary;
  auto add = [&](const std::string& part) {
    if (!part.empty()) {
      summary += summary.empty() ? "" : ", ";
      summary += part;
    }
  };
  if (const auto source = document.find("source"); source != document.end() && source->is_object()) {
    std::string commit = text_at(*source, "commit").substr(0, 12);
    if (const auto dirty = source->find("dirty"); dirty != source->end() && dirty->is_boolean() && dirty->get<bool>()) {
      commit += "+dirty";
    }
    const std::string branch = text_at(*source, "branch");
    add(branch.empty() ? commit : commit + " " + branch);
  }
  if (const auto compilers = document.find("compilers"); compilers != document.end() && compilers->is_object()) {
    for (const auto& [language, compiler] : compilers->items()) {
      add(text_at(compiler, "id") + " " + text_at(compiler, "version") + " (" + language + ")");
    }
  }
  add(text_at(document, "build_type"));
  return summary;
}

} // namespace fingerprint::store
