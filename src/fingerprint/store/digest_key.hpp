#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/util/expected.hpp>

#include <string>
#include <string_view>

namespace fingerprint::store {

// An artifact's name: "<algorithm>:<lowercase hex>", e.g. "sha256:9f86d0...".
// Keys are validated before any of them becomes part of a path.
struct DigestKey
{
  digest::Algorithm algorithm = digest::k_default_algorithm;
  std::string hex;

  std::string str() const;
  // "objects/sha256/9f/9f86d0....jsonl", relative to the store.
  std::string log_path() const;
  bool operator==(const DigestKey&) const = default;
};

Expected<DigestKey> parse_digest_key(std::string_view text);

// True when a command-line argument is meant as a digest rather than a file:
// "<letters and digits>:<anything>". Such an argument is then validated
// strictly and never looked up on the filesystem (so "sha256:../../x" is
// refused, not opened); a file whose name looks like that can be given as
// ./name.
bool looks_like_digest_key(std::string_view argument);

} // namespace fingerprint::store
