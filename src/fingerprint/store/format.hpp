#pragma once

#include <fingerprint/util/expected.hpp>

#include <string>
#include <string_view>

namespace fingerprint::store {

// The directory store's layout version, in <store>/fingerprint-store.json.
// A reader accepts [k_oldest_supported_format, k_current_format]; a newer
// store is refused with a clear error rather than misread.
inline constexpr int k_oldest_supported_format = 1;
inline constexpr int k_current_format = 1;

inline constexpr std::string_view k_format_file = "fingerprint-store.json";

// The format file's text for a store created now.
std::string make_format_file(int64_t created_ns);

// Checks a format file's text; `path` names it in errors.
Expected<int> check_format_file(std::string_view text, const std::string& path);

} // namespace fingerprint::store
