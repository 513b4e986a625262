#pragma once

// A build's provenance (README, "Build provenance"): one JSON object per
// build invocation, written once by its first hook that records
// (hook/provenance.hpp) and never changed. It names its build:
//
//   {"provenance": 1, "project": "calc", "build": "3-1a2b3c4d",
//    "host": ..., "time": ..., "source_dir": ..., "build_dir": ...,
//    "source": {"vcs": "git", "commit": ..., "branch": ..., "dirty": false, "remote": ...} | null,
//    "cmake": {"version": ..., "generator": ...}, "build_type": ... | null,
//    "compilers": {"CXX": {"id": "GNU", "version": "12.2.0", "path": ...}, ...},
//    "flags": {"CXX": ..., "CXX_RELEASE": ..., "EXE_LINKER": ..., ...}, "flags_digest": "sha256:...",
//    "ci": {"url": ...} | null}
//
// The store keeps its bytes as given; readers take what they know of it.

#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace fingerprint::store {

inline constexpr int k_provenance_version = 1;

// The document in `text`, checked: a JSON object of version 1 that names
// `build` (its project and build id). `where` names it in the error.
Expected<nlohmann::json> parse_provenance(std::string_view text, const BuildRef& build, const std::string& where);

// The string at `key` of the JSON object `object`; empty when it is not an
// object, has no such key, or the value is not a string (a document's
// fields are read leniently: readers take what they know).
template <typename Json>
std::string
json_text(const Json& object, const char* key)
{
  if (!object.is_object()) {
    return {};
  }
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->template get<std::string>() : std::string();
}

// The short form people read: "<commit 12>[+dirty] <branch>, GNU 12.2.0 (CXX), Release";
// empty when the document says none of it.
std::string provenance_summary(const nlohmann::json& document);

} // namespace fingerprint::store
