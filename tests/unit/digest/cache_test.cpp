#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/util/text.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>

namespace fingerprint::digest {
namespace {

using test::TempDir;

const std::string k_hex_a = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";

FileIdentity
identity(int64_t mtime_ns, int64_t ctime_ns)
{
  FileIdentity id;
  id.device = 42;
  id.inode = 4242;
  id.size = 1;
  id.mtime_ns = mtime_ns;
  id.ctime_ns = ctime_ns;
  return id;
}

TEST(DigestCache, AnEntryReadWithinOneTickOfTheLastChangeIsNotTrusted)
{
  constexpr int64_t tick = 4'000'000;
  const auto id = identity(1'000'000'000, 1'000'000'500);
  // ctime is the later change; the read must be a full tick after it.
  EXPECT_FALSE(DigestCache::is_trustworthy(id, 1'000'000'500, tick));
  EXPECT_FALSE(DigestCache::is_trustworthy(id, 1'000'000'500 + tick - 1, tick));
  EXPECT_TRUE(DigestCache::is_trustworthy(id, 1'000'000'500 + tick, tick));
  // A read before the change (clock skew, a file from the future) never counts.
  EXPECT_FALSE(DigestCache::is_trustworthy(id, 999'000'000, tick));
}

TEST(DigestCache, YoungEntriesAreNotStoredAndOldOnesAre)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  constexpr int64_t tick = 1'000'000'000;
  const auto id = identity(5 * tick, 5 * tick);
  cache.store(Algorithm::sha256, id, k_hex_a, 5 * tick + tick - 1, tick);
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, id)) << "a racy entry was kept";
  cache.store(Algorithm::sha256, id, k_hex_a, 5 * tick + tick, tick);
  const auto hit = cache.lookup(Algorithm::sha256, id);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, k_hex_a);
}

TEST(DigestCache, AnyChangeInTheKeyMisses)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  const auto id = identity(1'000'000'000, 1'000'000'000);
  cache.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  ASSERT_TRUE(cache.lookup(Algorithm::sha256, id));
  auto changed = id;
  changed.size = 2;
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, changed));
  changed = id;
  changed.mtime_ns += 1;
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, changed));
  changed = id;
  changed.ctime_ns += 1;
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, changed));
  changed = id;
  changed.inode += 1;
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, changed));
  EXPECT_FALSE(cache.lookup(Algorithm::md5, id)) << "entries are per algorithm";
}

TEST(DigestCache, DamagedEntriesMissAndDisabledCacheDoesNothing)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  const auto id = identity(1'000'000'000, 1'000'000'000);
  cache.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  ASSERT_TRUE(cache.lookup(Algorithm::sha256, id));
  // Overwrite every entry file with garbage.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) {
      test::write_file(entry.path(), "1 1000000000 1000000000 not-hex\n");
    }
  }
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, id));

  const DigestCache disabled("");
  disabled.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  EXPECT_FALSE(disabled.lookup(Algorithm::sha256, id));
}

TEST(DigestCache, GranularityIsAtLeastOneTickAndASecondForWholeSecondStamps)
{
  TempDir dir;
  test::write_file(dir / "f", "a");
  util::Fd fd(::open((dir / "f").c_str(), O_RDONLY));
  ASSERT_TRUE(fd);
  EXPECT_GE(DigestCache::granularity_ns(fd.get(), identity(1'000'000'001, 1'000'000'001)), 1);
  EXPECT_LE(DigestCache::granularity_ns(fd.get(), identity(1'000'000'001, 1'000'000'001)), 1'000'000'000);
  EXPECT_EQ(DigestCache::granularity_ns(fd.get(), identity(1'000'000'000, 2'000'000'000)), 1'000'000'000);
}

// End to end: an unchanged file is answered from the cache (proved by
// planting a different digest in its entry), and a rewrite is read again.
TEST(DigestCache, UnchangedFilesAreNotReadAgainAndRewrittenOnesAre)
{
  TempDir dir;
  const DigestCache cache(dir / "cache");
  const std::string path = dir / "file";
  test::write_file(path, "a");
  struct stat st
  {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const auto id = FileIdentity::from_stat(st);
  util::Fd fd(::open(path.c_str(), O_RDONLY));
  const int64_t granularity = DigestCache::granularity_ns(fd.get(), id);
  std::this_thread::sleep_for(std::chrono::nanoseconds(2 * granularity));

  Hasher hasher(Algorithm::sha256);
  auto first = digest_path(hasher, path, &cache);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->hex, k_hex_a);
  ASSERT_TRUE(cache.lookup(Algorithm::sha256, id)) << "an old enough file was not cached";

  const std::string planted(64, 'f');
  cache.store(Algorithm::sha256, id, planted, util::now_ns(), 0);
  auto second = digest_path(hasher, path, &cache);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->hex, planted) << "the cache was not consulted";

  test::write_file(path, "b");
  auto third = digest_path(hasher, path, &cache);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->hex, "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d");
}

} // namespace
} // namespace fingerprint::digest
