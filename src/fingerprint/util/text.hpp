#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace fingerprint::util {

// Lowercase hexadecimal of `size` bytes.
std::string to_hex(const unsigned char* data, size_t size);

// What to_hex() reads back: the hex.size() / 2 bytes that lowercase
// hexadecimal `hex` spells, into `out`. False for an odd length or any
// other character, and `out` is then left part written.
bool from_hex(std::string_view hex, unsigned char* out);

// The same appended to `out`; false, and `out` as it was, for text that
// is not lowercase hexadecimal.
bool append_from_hex(std::string_view hex, std::string& out);

// `value` as 16 lowercase hexadecimal digits (a checksum in a text file).
std::string hex64(uint64_t value);

// The words of `line` between single spaces, empty ones kept ("a  b" is
// "a", "", "b"): the fields of the store's space-separated index lines.
std::vector<std::string_view> split_spaces(std::string_view line);

// Parses all of `text` as a decimal number; false for anything else
// (empty, a sign where none fits, trailing bytes, out of range).
template <typename Number>
bool
parse_number(std::string_view text, Number& value)
{
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

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
