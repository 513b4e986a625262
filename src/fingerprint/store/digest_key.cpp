#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>

namespace fingerprint::store {

std::string
DigestKey::str() const
{
  std::string result(digest::algorithm_name(algorithm));
  result += ':';
  result += hex;
  return result;
}

std::string
DigestKey::log_path() const
{
  return layout::artifact_log(*this);
}

Expected<DigestKey>
parse_digest_key(std::string_view text)
{
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    return make_error(std::string(text), "not a digest (expected <algorithm>:<hex>, e.g. sha256:<64 hex digits>)");
  }
  const auto algorithm = digest::parse_algorithm(text.substr(0, colon));
  if (!algorithm) {
    return make_error(std::string(text),
                      "unknown digest algorithm '" + std::string(text.substr(0, colon))
                        + "' (known: sha256, sha512, sha1, md5, blake2b512)");
  }
  const std::string_view hex = text.substr(colon + 1);
  const size_t expected_length = 2 * digest::digest_size(*algorithm);
  if (!util::is_lower_hex(hex, expected_length)) {
    return make_error(std::string(text),
                      "not a valid digest (expected " + std::string(digest::algorithm_name(*algorithm))
                        + ": followed by " + std::to_string(expected_length) + " lowercase hex digits)");
  }
  return DigestKey{*algorithm, std::string(hex)};
}

bool
looks_like_digest_key(std::string_view argument)
{
  const auto colon = argument.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return false;
  }
  const auto prefix = argument.substr(0, colon);
  return std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

} // namespace fingerprint::store
