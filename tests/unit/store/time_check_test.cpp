#include <fingerprint/store/time_check.hpp>
#include <fingerprint/util/text.hpp>

#include <gtest/gtest.h>

namespace fingerprint::store {
namespace {

constexpr int64_t k_second = 1'000'000'000;

TEST(TimeCheck, OnlyATimeBeyondTheToleranceIsInTheFuture)
{
  const int64_t now = util::parse_rfc3339("2026-12-01T12:00:00.000Z");
  EXPECT_TRUE(time_is_in_future("2026-12-02T12:00:00.000Z", now, k_future_tolerance_ns));
  EXPECT_TRUE(time_is_in_future("2026-12-01T12:00:02Z", now, 1 * k_second));
  EXPECT_FALSE(time_is_in_future("2026-12-01T12:00:01.000Z", now, 1 * k_second)) << "exactly the tolerance";
  EXPECT_FALSE(time_is_in_future("2026-12-01T12:04:00.000Z", now, k_future_tolerance_ns));
  EXPECT_FALSE(time_is_in_future("2026-12-01T12:00:00.000Z", now, 0));
  EXPECT_FALSE(time_is_in_future("2020-01-01T00:00:00.000Z", now, 0));
}

TEST(TimeCheck, ATimeThatDoesNotParseIsNotInTheFuture)
{
  const int64_t now = util::parse_rfc3339("2026-12-01T12:00:00.000Z");
  EXPECT_FALSE(time_is_in_future("", now, 0));
  EXPECT_FALSE(time_is_in_future("tomorrow", now, 0));
  EXPECT_FALSE(time_is_in_future("2099-01-01 00:00:00", now, 0));
}

} // namespace
} // namespace fingerprint::store
