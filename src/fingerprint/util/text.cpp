#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <vector>

namespace fingerprint::util {

std::string
to_hex(const unsigned char* data, size_t size)
{
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string result(size * 2, '\0');
  for (size_t i = 0; i < size; ++i) {
    result[2 * i] = k_digits[data[i] >> 4];
    result[2 * i + 1] = k_digits[data[i] & 0xf];
  }
  return result;
}

namespace {

// Each byte's value as a lower-case hex digit, 0xff for any other byte: one
// load a character (a hook turns a few hundred digests a call into bytes).
constexpr std::array<unsigned char, 256> k_hex_values = [] {
  std::array<unsigned char, 256> values{};
  values.fill(0xff);
  for (int c = '0'; c <= '9'; ++c) {
    values[static_cast<size_t>(c)] = static_cast<unsigned char>(c - '0');
  }
  for (int c = 'a'; c <= 'f'; ++c) {
    values[static_cast<size_t>(c)] = static_cast<unsigned char>(c - 'a' + 10);
  }
  return values;
}();

} // namespace

bool
from_hex(std::string_view hex, unsigned char* out)
{
  if (hex.size() % 2 != 0) {
    return false;
  }
  unsigned bad = 0;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const unsigned high = k_hex_values[static_cast<unsigned char>(hex[i])];
    const unsigned low = k_hex_values[static_cast<unsigned char>(hex[i + 1])];
    bad |= high | low;
    out[i / 2] = static_cast<unsigned char>(high << 4 | low);
  }
  return bad < 16; // every digit below 16: no 0xff among them
}

bool
append_from_hex(std::string_view hex, std::string& out)
{
  const size_t before = out.size();
  out.resize(before + hex.size() / 2);
  if (!from_hex(hex, reinterpret_cast<unsigned char*>(out.data() + before))) {
    out.resize(before);
    return false;
  }
  return true;
}

bool
is_lower_hex(std::string_view text, size_t length)
{
  if (text.size() != length) {
    return false;
  }
  // A character loop, not a regular expression: this runs once per event.
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

size_t
edit_distance(std::string_view a, std::string_view b)
{
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

int64_t
now_ns()
{
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string
format_rfc3339(int64_t ns_since_epoch)
{
  const time_t seconds = static_cast<time_t>(ns_since_epoch / 1'000'000'000);
  const int millis = static_cast<int>((ns_since_epoch / 1'000'000) % 1000);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[40];
  const size_t n = strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &utc);
  std::string result(buffer, n);
  char fraction[8];
  snprintf(fraction, sizeof(fraction), ".%03dZ", millis);
  result += fraction;
  return result;
}

int64_t
parse_rfc3339(std::string_view text)
{
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  int consumed = 0;
  const std::string copy(text.substr(0, 64));
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute, &second, &consumed)
        != 6
      || consumed != 19) {
    return -1;
  }
  int64_t fraction_ns = 0;
  size_t at = 19;
  if (at < copy.size() && copy[at] == '.') {
    int64_t scale = 100'000'000;
    for (++at; at < copy.size() && copy[at] >= '0' && copy[at] <= '9'; ++at, scale /= 10) {
      fraction_ns += (copy[at] - '0') * scale;
    }
  }
  if (at + 1 != copy.size() || copy[at] != 'Z') {
    return -1;
  }
  tm utc{};
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  utc.tm_sec = second;
  return static_cast<int64_t>(timegm(&utc)) * 1'000'000'000 + fraction_ns;
}

std::string
format_clock_time(int64_t ns_since_epoch, bool utc)
{
  const time_t seconds = static_cast<time_t>(ns_since_epoch / 1'000'000'000);
  struct tm parts
  {};
  if (utc) {
    ::gmtime_r(&seconds, &parts);
  } else {
    ::tzset(); // localtime_r need not read $TZ itself
    ::localtime_r(&seconds, &parts);
  }
  char text[64];
  const size_t size = std::strftime(text, sizeof text, utc ? "%Y-%m-%d %H:%M UTC" : "%Y-%m-%d %H:%M %z", &parts);
  std::string result(text, size);
  if (!utc && result.size() >= 5) {
    result.insert(result.size() - 2, ":"); // ISO 8601's "+01:00" rather than strftime's "+0100"
  }
  return result;
}

std::string
relative_time(int64_t then_ns, int64_t now_ns)
{
  const int64_t seconds = (now_ns - then_ns) / 1'000'000'000;
  if (seconds < -60) {
    return "in the future";
  }
  if (seconds < 5) {
    return "just now";
  }
  if (seconds < 60) {
    return std::to_string(seconds) + " s ago";
  }
  if (seconds < 3600) {
    return std::to_string(seconds / 60) + " min ago";
  }
  if (seconds < 48 * 3600) {
    return std::to_string(seconds / 3600) + " h ago";
  }
  return std::to_string(seconds / 86400) + " days ago";
}

std::string
hex64(uint64_t value)
{
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<size_t>(i)] = k_digits[value & 0xf];
    value >>= 4;
  }
  return out;
}

std::vector<std::string_view>
split_spaces(std::string_view line)
{
  std::vector<std::string_view> words;
  size_t start = 0;
  while (start <= line.size()) {
    const size_t space = line.find(' ', start);
    const size_t end = space == std::string_view::npos ? line.size() : space;
    words.push_back(line.substr(start, end - start));
    if (space == std::string_view::npos) {
      break;
    }
    start = space + 1;
  }
  return words;
}

} // namespace fingerprint::util
