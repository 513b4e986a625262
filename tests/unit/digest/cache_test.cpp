#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/util/text.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

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

// remember_in_process on for one test, as the recorder has it.
struct RememberingInProcess
{
  RememberingInProcess() { DigestCache::remember_in_process(true); }
  RememberingInProcess(const RememberingInProcess&) = delete;
  RememberingInProcess& operator=(const RememberingInProcess&) = delete;
  ~RememberingInProcess() { DigestCache::remember_in_process(false); }
};

// The recorder's memory of the table: what it found or stored is answered
// without the table, by the same key (any change misses), per directory,
// and only what the table would keep is kept.
TEST(DigestCache, RememberedInProcessByTheTablesOwnKey)
{
  const RememberingInProcess remembering;
  TempDir dir;
  TempDir other;
  const DigestCache cache(dir.path());
  constexpr int64_t tick = 1'000'000'000;
  const auto id = identity(5 * tick, 5 * tick);
  const auto young = identity(7 * tick, 7 * tick);
  cache.store(Algorithm::sha256, id, k_hex_a, 6 * tick, tick);
  cache.store(Algorithm::sha256, young, k_hex_a, 7 * tick, tick); // racy: neither stored nor remembered
  // The table gone (a cache opened now finds none): what was stored is
  // still answered, from memory.
  std::filesystem::remove_all(dir / "digests");
  ASSERT_FALSE(std::filesystem::exists(cache.table_path(Algorithm::sha256)));
  const DigestCache reopened(dir.path());
  const auto hit = reopened.lookup(Algorithm::sha256, id);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, k_hex_a);
  EXPECT_FALSE(reopened.lookup(Algorithm::sha256, young));
  EXPECT_FALSE(reopened.lookup(Algorithm::sha512, id)) << "another algorithm's digest";
  auto changed = id;
  changed.ctime_ns += 1;
  EXPECT_FALSE(reopened.lookup(Algorithm::sha256, changed));
  EXPECT_FALSE(DigestCache(other.path()).lookup(Algorithm::sha256, id)) << "another cache directory's";
  // Not remembering: the table alone answers, and it is gone.
  DigestCache::remember_in_process(false);
  EXPECT_FALSE(DigestCache(dir.path()).lookup(Algorithm::sha256, id));
}

TEST(DigestCache, TablesKeptInProcessAreOpenedAnewWhenTheirNameNamesAnotherFile)
{
  const RememberingInProcess remembering;
  TempDir dir;
  constexpr int64_t tick = 1'000'000'000;
  const auto first = identity(5 * tick, 5 * tick);
  const auto second = identity(6 * tick, 6 * tick);
  DigestCache(dir.path()).store(Algorithm::sha256, first, k_hex_a, 9 * tick, tick);
  const std::string table = DigestCache(dir.path()).table_path(Algorithm::sha256);
  ASSERT_TRUE(std::filesystem::exists(table));
  // The directory removed (by hand, or a test between builds): the next
  // cache stores into a new table under the name, not into the one kept
  // open, which no other process would ever read again.
  std::filesystem::remove_all(dir / "digests");
  DigestCache(dir.path()).store(Algorithm::sha256, second, k_hex_a, 9 * tick, tick);
  ASSERT_TRUE(std::filesystem::exists(table)) << "stored into the removed table";
  DigestCache::remember_in_process(false);
  EXPECT_TRUE(DigestCache(dir.path()).lookup(Algorithm::sha256, second)) << "not in the table the name names";
  EXPECT_FALSE(DigestCache(dir.path()).lookup(Algorithm::sha256, first)) << "the old table's entry";
  // Kept while the name names it: a second cache of the process finds what
  // the first stored, through the same table.
  DigestCache::remember_in_process(true);
  const auto third = identity(7 * tick, 7 * tick);
  DigestCache(dir.path()).store(Algorithm::sha256, third, k_hex_a, 9 * tick, tick);
  DigestCache::remember_in_process(false);
  EXPECT_TRUE(DigestCache(dir.path()).lookup(Algorithm::sha256, third));
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

// Keys whose home is the table's last slot: the second one stored lands in
// slot 0, and a lookup reads its window across the end in two parts.
TEST(DigestCache, AWindowAcrossTheTablesEndIsReadWhole)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  std::vector<FileIdentity> at_end;
  auto id = identity(1'000'000'000, 1'000'000'000);
  for (uint64_t inode = 1; at_end.size() < 2; ++inode) {
    id.inode = inode;
    if (DigestCache::home_slot(id) == DigestCache::k_slot_count - 1) {
      at_end.push_back(id);
    }
  }
  const std::string k_hex_b = "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d";
  cache.store(Algorithm::sha256, at_end[0], k_hex_a, 10'000'000'000, 1);
  cache.store(Algorithm::sha256, at_end[1], k_hex_b, 10'000'000'000, 1);
  const DigestCache fresh(dir.path()); // looks up by reading, without the mapping a store makes
  const auto first = fresh.lookup(Algorithm::sha256, at_end[0]);
  const auto second = fresh.lookup(Algorithm::sha256, at_end[1]);
  ASSERT_TRUE(first);
  ASSERT_TRUE(second) << "the part of the window past the table's end was not read";
  EXPECT_EQ(*first, k_hex_a);
  EXPECT_EQ(*second, k_hex_b);
}

// The table cut short under a process that has it mapped (its pages past
// the new end raise SIGBUS) and then overwritten with garbage: that process
// misses and goes on; a new one finds the header wrong, misses, and its
// first store replaces the table with a whole one.
TEST(DigestCache, DamagedTableMissesNeverCrashesAndIsReplaced)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  const auto id = identity(1'000'000'000, 1'000'000'000);
  cache.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  ASSERT_TRUE(cache.lookup(Algorithm::sha256, id));
  const std::string table = cache.table_path(Algorithm::sha256);
  ASSERT_TRUE(std::filesystem::is_regular_file(table));
  test::write_file(table, "1 1000000000 1000000000 not-hex\n");
  EXPECT_FALSE(cache.lookup(Algorithm::sha256, id)) << "a lookup in a table cut short under its mapping";
  cache.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1); // no crash either

  const DigestCache fresh(dir.path());
  EXPECT_FALSE(fresh.lookup(Algorithm::sha256, id)) << "a lookup in a table with no header";
  fresh.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  const auto hit = fresh.lookup(Algorithm::sha256, id);
  ASSERT_TRUE(hit) << "the damaged table was not replaced";
  EXPECT_EQ(*hit, k_hex_a);
  EXPECT_GT(std::filesystem::file_size(table), 64U * 1024);

  const DigestCache disabled("");
  disabled.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  EXPECT_FALSE(disabled.lookup(Algorithm::sha256, id));
}

// One slot, read as another process would see it mid-write or after a torn
// page: an odd sequence (a writer at work, or one that died) and a checksum
// that does not hold are misses, never the digest the slot holds.
TEST(DigestCache, SlotsBeingWrittenOrTornAreMisses)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  const auto id = identity(1'000'000'000, 1'000'000'000);
  cache.store(Algorithm::sha256, id, k_hex_a, 10'000'000'000, 1);
  ASSERT_TRUE(cache.lookup(Algorithm::sha256, id));
  const std::string table = cache.table_path(Algorithm::sha256);
  const size_t slot_words = DigestCache::k_key_words + 4;
  const off_t slot =
    static_cast<off_t>((DigestCache::k_header_words + DigestCache::home_slot(id) * slot_words) * sizeof(uint64_t));
  util::Fd fd(::open(table.c_str(), O_RDWR));
  ASSERT_TRUE(fd);
  const auto word_at = [&](size_t word) {
    uint64_t value = 0;
    EXPECT_EQ(::pread(fd.get(), &value, sizeof(value), slot + static_cast<off_t>(word * sizeof(value))), 8);
    return value;
  };
  const auto set_word = [&](size_t word, uint64_t value) {
    EXPECT_EQ(::pwrite(fd.get(), &value, sizeof(value), slot + static_cast<off_t>(word * sizeof(value))), 8);
  };
  ASSERT_EQ(word_at(2), id.inode) << "the entry is not in its home slot";
  const uint64_t sequence = word_at(0);
  ASSERT_EQ(sequence % 2, 0U);
  set_word(0, sequence + 1);
  EXPECT_FALSE(DigestCache(dir.path()).lookup(Algorithm::sha256, id)) << "a slot being written was read";
  set_word(0, sequence);
  ASSERT_TRUE(DigestCache(dir.path()).lookup(Algorithm::sha256, id));
  const uint64_t first_digest_word = word_at(DigestCache::k_key_words);
  set_word(DigestCache::k_key_words, first_digest_word ^ 1);
  EXPECT_FALSE(DigestCache(dir.path()).lookup(Algorithm::sha256, id)) << "a digest that fails its checksum was used";
}

// Threads storing and looking up overlapping keys at once, as parallel
// digests and concurrent hooks do: every hit is the digest stored for that
// very key (run under ThreadSanitizer too).
TEST(DigestCache, ConcurrentStoresAndLookupsNeverGiveAnotherKeysDigest)
{
  TempDir dir;
  const DigestCache cache(dir.path());
  const auto hex_of = [](uint64_t inode, int version) {
    std::string hex = util::hex64(inode * 7919 + static_cast<uint64_t>(version));
    while (hex.size() < 64) {
      hex += hex;
    }
    return hex.substr(0, 64);
  };
  std::atomic<int> wrong{0};
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const DigestCache own(dir.path()); // a process of its own, as far as the mapping goes
      const DigestCache& use = t % 2 == 0 ? cache : own;
      for (int round = 0; round < 2000; ++round) {
        auto id = identity(1'000'000'000, 1'000'000'000);
        id.inode = static_cast<uint64_t>(round % 97);
        const int version = (round / 97 + t) % 3;
        id.size = static_cast<uint64_t>(version);
        use.store(Algorithm::sha256, id, hex_of(id.inode, version), 10'000'000'000, 1);
        for (int other = 0; other < 3; ++other) {
          id.size = static_cast<uint64_t>(other);
          if (auto hit = use.lookup(Algorithm::sha256, id)) {
            ++hits;
            if (*hit != hex_of(id.inode, other)) {
              ++wrong;
            }
          }
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
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
