#include <fingerprint/store/time_check.hpp>
#include <fingerprint/util/text.hpp>

namespace fingerprint::store {

bool
time_is_in_future(std::string_view rfc3339, std::int64_t now_ns, std::int64_t tolerance_ns)
{
  const std::int64_t when = util::parse_rfc3339(rfc3339);
  // Compared as a difference: now + tolerance could overflow for a huge tolerance.
  return when >= 0 && tolerance_ns >= 0 && when > now_ns && when - now_ns > tolerance_ns;
}

} // namespace fingerprint::store
