#include <fingerprint/store/provenance.hpp>

namespace fingerprint::store {

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
  if (json_text(document, "project") != build.project || json_text(document, "build") != build.build) {
    return make_error(where,
                      "the build provenance of " + json_text(document, "project") + " " + json_text(document, "build")
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
    std::string commit = json_text(*source, "commit").substr(0, 12);
    if (const auto dirty = source->find("dirty"); dirty != source->end() && dirty->is_boolean() && dirty->get<bool>()) {
      commit += "+dirty";
    }
    const std::string branch = json_text(*source, "branch");
    add(branch.empty() ? commit : commit + " " + branch);
  }
  if (const auto compilers = document.find("compilers"); compilers != document.end() && compilers->is_object()) {
    for (const auto& [language, compiler] : compilers->items()) {
      add(json_text(compiler, "id") + " " + json_text(compiler, "version") + " (" + language + ")");
    }
  }
  add(json_text(document, "build_type"));
  return summary;
}

} // namespace fingerprint::store
