#pragma once

// Recorded times that cannot be right: an event's `time` is the clock of
// the machine that recorded it, and a skewed clock writes times in the
// future. fsck warns about them; gc trusts a tree's build sequence over them
// (store/gc.hpp).

#include <cstdint>
#include <string_view>

namespace fingerprint::store {

// True when `rfc3339` (an event's `time`) is more than `tolerance_ns` after
// `now_ns`. A time that does not parse is not in the future (fsck reports
// it as malformed elsewhere).
bool time_is_in_future(std::string_view rfc3339, std::int64_t now_ns, std::int64_t tolerance_ns);

// The tolerance fsck and gc use: clocks of one fleet that NTP keeps within
// milliseconds of each other are not worth a warning; a clock a day ahead is.
inline constexpr std::int64_t k_future_tolerance_ns = 5LL * 60 * 1'000'000'000;

} // namespace fingerprint::store
