#include <fingerprint/store/path_index.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace fingerprint::store {
namespace {

// The encoded index in an unlinked temporary file, opened.
Expected<PathIndex>
open_bytes(const std::string& bytes)
{
  char name[] = "/tmp/fingerprint-path-index-XXXXXX";
  util::Fd fd(::mkstemp(name));
  ::unlink(name);
  if (!fd || ::write(fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    return Error{"cannot write the temporary file"};
  }
  return PathIndex::open(std::move(fd), "index");
}

std::vector<std::string>
builds_at(const PathIndex& index, const std::string& path)
{
  std::vector<uint32_t> numbers;
  EXPECT_TRUE(index.builds_at(path_hash(path), numbers));
  std::vector<std::string> names;
  for (const uint32_t number : numbers) {
    const BuildRef build = index.build(number & ~PathIndex::k_through_inputs);
    names.push_back(build.project + "/" + build.build
                    + ((number & PathIndex::k_through_inputs) != 0 ? " (input)" : ""));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// 3 builds, 2,000 paths: more than one bucket's worth, so the lookups
// cross buckets.
std::string
sample(RecentMark mark = {})
{
  PathIndexBuilder builder(mark);
  const uint32_t a = builder.add_build({"app", "1"});
  const uint32_t b = builder.add_build({"lib z", "2/x"});
  const uint32_t c = builder.add_build({"tool", "7"});
  for (int i = 0; i < 1000; ++i) {
    builder.add_path(a, "/src/a/" + std::to_string(i) + ".cpp", true);
    builder.add_path(b, "/src/b/" + std::to_string(i) + ".cpp", true);
  }
  builder.add_path(a, "/out/app", false);
  builder.add_path(b, "/usr/include/stdio.h", true);
  builder.add_path(a, "/usr/include/stdio.h", true);
  builder.add_path(a, "/usr/include/stdio.h", false); // once, as an input
  builder.read_always(c);
  return builder.encode();
}

TEST(PathIndex, AnEncodedIndexNamesTheBuildsOfEachPath)
{
  auto index = open_bytes(sample({7, 8, 9}));
  ASSERT_TRUE(index) << index.error().message;
  EXPECT_EQ(index->mark(), (RecentMark{7, 8, 9}));
  EXPECT_EQ(index->build_count(), 3U);
  EXPECT_EQ(builds_at(*index, "/out/app"), std::vector<std::string>{"app/1"});
  EXPECT_EQ(builds_at(*index, "/usr/include/stdio.h"),
            (std::vector<std::string>{"app/1 (input)", "lib z/2/x (input)"}));
  EXPECT_EQ(builds_at(*index, "/src/b/999.cpp"), std::vector<std::string>{"lib z/2/x (input)"});
  EXPECT_EQ(builds_at(*index, "/nowhere"), std::vector<std::string>{});
  ASSERT_EQ(index->always().size(), 1U);
  EXPECT_EQ(index->build(index->always()[0]).project, "tool");
  auto by_build = index->entries_by_build();
  ASSERT_TRUE(by_build);
  EXPECT_EQ((*by_build)[0].size(), 1002U) << "1,000 sources, the program, the header once";
  EXPECT_EQ((*by_build)[2].size(), 0U);
}

TEST(PathIndex, EveryByteChangedOrCutIsCaughtOrHarmless)
{
  const std::string good = sample();
  auto reference = open_bytes(good);
  ASSERT_TRUE(reference);
  const std::vector<std::string> paths = {"/out/app", "/usr/include/stdio.h", "/src/a/17.cpp", "/src/b/500.cpp"};
  size_t caught = 0;
  // Every byte of the head and table, and a sample of the entries.
  for (size_t at = 0; at < good.size(); at += at < 2000 ? 1 : 97) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    auto index = open_bytes(bad);
    if (!index) {
      ++caught;
      continue;
    }
    // Opened: then each lookup fails, or answers as the good one does (the
    // byte was one no lookup of these paths reads), or the damage is in the
    // mark, which no checksum could tell from another mark.
    for (const std::string& path : paths) {
      std::vector<uint32_t> got;
      std::vector<uint32_t> want;
      ASSERT_TRUE(reference->builds_at(path_hash(path), want));
      if (!index->builds_at(path_hash(path), got)) {
        ++caught;
        continue;
      }
      EXPECT_EQ(got, want) << "byte " << at << " changed, " << path;
    }
  }
  EXPECT_GT(caught, 100U);
  for (size_t size = 0; size < good.size(); size += 61) {
    EXPECT_FALSE(open_bytes(good.substr(0, size))) << "cut to " << size << " bytes";
  }
}

TEST(PathIndex, RecentLinesReadBackAndAnythingElseIsRefused)
{
  const std::string text = recent_line({"my project", "1"}) + "\n" + recent_line({"p", "a/b"}) + "\n";
  auto builds = parse_recent(text);
  ASSERT_TRUE(builds);
  ASSERT_EQ(builds->size(), 2U);
  EXPECT_EQ((*builds)[0].project, "my project");
  EXPECT_EQ((*builds)[1].build, "a/b");
  EXPECT_TRUE(parse_recent(""));
  EXPECT_FALSE(parse_recent("p 1")) << "torn: no newline";
  EXPECT_FALSE(parse_recent("p\n"));
  EXPECT_FALSE(parse_recent("p 1 2\n"));
  EXPECT_FALSE(parse_recent("{\"v\":1}\n"));
}

} // namespace
} // namespace fingerprint::store
