#include <fingerprint/store/format.hpp>
#include <fingerprint/util/text.hpp>

#include <nlohmann/json.hpp>

namespace fingerprint::store {

namespace {

constexpr std::string_view k_layout = "objects/<algorithm>/<2 hex>/<hex>.jsonl; builds/<project>/<build id>.jsonl; "
                                      "manifests/<algorithm>/<2 hex>/<hex>; inputs/<algorithm>/<2 hex>/<hex>; "
                                      "inputs/<algorithm>/journal; builds.recent";

} // namespace

std::string
make_format_file(int64_t created_ns)
{
  nlohmann::ordered_json object;
  object["format"] = k_current_format;
  object["created"] = util::format_rfc3339(created_ns);
  object["layout"] = k_layout;
  return object.dump(2) + "\n";
}

std::string
upgrade_format_file(std::string_view text, int64_t now_ns)
{
  auto object = nlohmann::ordered_json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    object = nlohmann::ordered_json::object(); // checked before: not reached
  }
  object["format"] = k_current_format;
  object["layout"] = k_layout;
  object["upgraded"] = util::format_rfc3339(now_ns);
  return object.dump(2) + "\n";
}

Expected<int>
check_format_file(std::string_view text, const std::string& path)
{
  // A format file is a few hundred bytes; anything large is not ours.
  if (text.size() > 64 * 1024) {
    return make_error(path, "not a fingerprint store format file (larger than 64 KiB)");
  }
  const auto object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return make_error(path, "not valid JSON; the store's format file is damaged");
  }
  const auto format = object.find("format");
  if (format == object.end() || !format->is_number_unsigned()) {
    return make_error(path, "has no numeric \"format\" field");
  }
  const auto value = format->get<uint64_t>();
  if (value > static_cast<uint64_t>(k_current_format)) {
    return make_error(path,
                      "store format " + std::to_string(value) + " is newer than this fingerprint supports ("
                        + std::to_string(k_oldest_supported_format) + ".." + std::to_string(k_current_format)
                        + "); upgrade fingerprint");
  }
  if (value < static_cast<uint64_t>(k_oldest_supported_format)) {
    return make_error(path, "store format " + std::to_string(value) + " is too old for this fingerprint");
  }
  return static_cast<int>(value);
}

} // namespace fingerprint::store
