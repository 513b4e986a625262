// One line of an artifact's log, as read from a store anyone in the group
// can write to. Beyond not crashing, two properties every line must keep:
// what parses serializes to a line that parses to the same serialization
// (the round trip the CMake module's tests check on real records), and the
// canonical fast reader agrees with the JSON parser it stands in for.

#include <fingerprint/store/event.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using fingerprint::store::parse_event;
using fingerprint::store::serialize;

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto parsed = parse_event(line);

  // A leading space is not canonical, so this spelling of the same line
  // always goes through the JSON parser.
  const auto full = parse_event(" " + std::string(line));
  if (parsed.has_value() != full.has_value() || (parsed && !(*parsed == *full))) {
    __builtin_trap();
  }

  if (!parsed) {
    return 0;
  }
  const std::string once = serialize(*parsed);
  const auto again = parse_event(once);
  if (!again || serialize(*again) != once) {
    __builtin_trap();
  }
  return 0;
}
