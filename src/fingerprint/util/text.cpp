#include <fingerprint/util/text.hpp>

#include <algorithm>
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

} // namespace fingerprint::util
