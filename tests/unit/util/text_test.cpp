#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/parallel.hpp>
#include <fingerprint/util/table.hpp>
#include <fingerprint/util/text.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace fingerprint::util {
namespace {

TEST(Text, HexAndHexValidation)
{
  const unsigned char bytes[] = {0x00, 0x9f, 0xff};
  EXPECT_EQ(to_hex(bytes, 3), "009fff");
  EXPECT_TRUE(is_lower_hex("009fff", 6));
  EXPECT_FALSE(is_lower_hex("009FFF", 6));
  EXPECT_FALSE(is_lower_hex("009ff", 6));
  EXPECT_FALSE(is_lower_hex("009ffg", 6));
}

TEST(Text, FromHexReadsBackWhatToHexWrote)
{
  std::string every_byte;
  for (int b = 0; b < 256; ++b) {
    every_byte += static_cast<char>(b);
  }
  const std::string hex = to_hex(reinterpret_cast<const unsigned char*>(every_byte.data()), every_byte.size());
  std::string out = "kept";
  ASSERT_TRUE(append_from_hex(hex, out));
  EXPECT_EQ(out, "kept" + every_byte);

  unsigned char two[2] = {};
  EXPECT_TRUE(from_hex("a05f", two));
  EXPECT_EQ(two[0], 0xa0);
  EXPECT_EQ(two[1], 0x5f);
  // Not lowercase hex: refused, and the string left as it was.
  for (const char* bad : {"abc", "0G", "A0", "0:", "/0", "g0", " 0", "\xff\x30", "0\x80", "\x30\xb0"}) {
    out = "kept";
    EXPECT_FALSE(append_from_hex(bad, out)) << bad;
    EXPECT_EQ(out, "kept") << bad;
  }
}

TEST(Text, EditDistance)
{
  EXPECT_EQ(edit_distance("show", "show"), 0u);
  EXPECT_EQ(edit_distance("shwo", "show"), 2u);
  EXPECT_EQ(edit_distance("recrd", "record"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Text, Rfc3339InUtcWithMilliseconds)
{
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(1'796'029'262'123'456'789), "2026-11-30T09:01:02.123Z");
}

TEST(Fs, SafeComponents)
{
  EXPECT_TRUE(is_safe_component("abc.jsonl"));
  EXPECT_FALSE(is_safe_component(""));
  EXPECT_FALSE(is_safe_component("."));
  EXPECT_FALSE(is_safe_component(".."));
  EXPECT_FALSE(is_safe_component("a/b"));
  EXPECT_FALSE(is_safe_component(std::string("a\0b", 3)));
}

TEST(Parallel, EveryIndexRunsExactlyOnce)
{
  for (const unsigned jobs : {1u, 2u, 8u}) {
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(hits.size(), jobs, [&](size_t index, unsigned worker) {
      EXPECT_LT(worker, jobs);
      ++hits[index];
    });
    for (const auto& hit : hits) {
      EXPECT_EQ(hit.load(), 1);
    }
  }
}

TEST(Table, ColumnsAreAligned)
{
  EXPECT_EQ(format_table({{"A", "BB"}, {"ccc", "d"}}, 1), " A    BB\n ccc  d\n");
}

} // namespace
} // namespace fingerprint::util

namespace fingerprint::util {
namespace {

TEST(Text, Rfc3339RoundTripsAndRefusesOtherShapes)
{
  const int64_t moment = 1'796'040'000'123'000'000;
  EXPECT_EQ(parse_rfc3339(format_rfc3339(moment)), moment);
  EXPECT_EQ(parse_rfc3339("2026-11-30T09:01:02Z"), parse_rfc3339("2026-11-30T09:01:02.000Z"));
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:01.5Z"), 1'500'000'000);
  EXPECT_EQ(parse_rfc3339("2026-11-30 09:01:02Z"), -1);
  EXPECT_EQ(parse_rfc3339("2026-11-30T09:01:02.123"), -1);
  EXPECT_EQ(parse_rfc3339("2026-11-30T09:01:02.123Z trailing"), -1);
  EXPECT_EQ(parse_rfc3339(""), -1);
}

TEST(Text, RelativeTimesReadLikeAPersonWouldSayThem)
{
  const int64_t now = 1'796'040'000'000'000'000;
  const int64_t second = 1'000'000'000;
  EXPECT_EQ(relative_time(now - 2 * second, now), "just now");
  EXPECT_EQ(relative_time(now - 42 * second, now), "42 s ago");
  EXPECT_EQ(relative_time(now - 3 * 60 * second, now), "3 min ago");
  EXPECT_EQ(relative_time(now - 5 * 3600 * second, now), "5 h ago");
  EXPECT_EQ(relative_time(now - 3 * 86400 * second, now), "3 days ago");
  EXPECT_EQ(relative_time(now + 3600 * second, now), "in the future");
}

} // namespace
} // namespace fingerprint::util
