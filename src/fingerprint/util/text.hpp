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

// Reads what format_rfc3339 writes (the fraction optional); -1 when `text`
// is not of that form.
int64_t parse_rfc3339(std::string_view text);

// The moment `ns_since_epoch` for people, to the minute, with its offset:
// local time as $TZ (else /etc/localtime) says, "2026-11-30 10:01 +01:00",
// or with `utc`, "2026-11-30 09:01 UTC".
std::string format_clock_time(int64_t ns_since_epoch, bool utc);

// How long before `now_ns` the moment `then_ns` was, for people: "just now",
// "42 s ago", "3 min ago", "5 h ago", "2 days ago"; "in the future" when a
// clock was off.
std::string relative_time(int64_t then_ns, int64_t now_ns);

} // namespace fingerprint::util
