#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fingerprint::util {

// Lowercase hexadecimal of `size` bytes.
std::string to_hex(const unsigned char* data, size_t size);

// True when `text` is exactly `length` characters of [0-9a-f].
bool is_lower_hex(std::string_view text, size_t length);

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

// Nanoseconds since the epoch (CLOCK_REALTIME).
int64_t now_ns();

// RFC 3339 UTC with milliseconds: 2026-11-30T09:01:02.123Z.
std::string format_rfc3339(int64_t ns_since_epoch);

} // namespace fingerprint::util
