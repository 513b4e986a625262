#include <fingerprint/digest/engine.hpp>
#include <fingerprint/digest/hasher.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fingerprint::digest {
namespace {

using test::TempDir;

struct KnownAnswer
{
  Algorithm algorithm;
  std::string input;
  std::string hex;
};

// Published vectors (FIPS 180 examples, RFC 1321, RFC 7693 / the BLAKE2
// reference), as printed by `openssl dgst` and coreutils.
const KnownAnswer k_known_answers[] = {
  {Algorithm::sha256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
  {Algorithm::sha256, "a", "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"},
  {Algorithm::sha256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
  {Algorithm::sha512,
   "",
   "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a53"
   "83"
   "27af927da3e"},
  {Algorithm::sha512,
   "a",
   "1f40fc92da241694750979ee6cf582f2d5d7d28e18335de05abc54d0560e0f5302860c652bf08d560252aa5e74210546f369fbbbce8c12cfc79"
   "57b2652fe9a75"},
  {Algorithm::sha512,
   "abc",
   "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9"
   "ac94fa54ca49f"},
  {Algorithm::sha1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
  {Algorithm::sha1, "a", "86f7e437faa5a7fce15d1ddcb9eaeaea377667b8"},
  {Algorithm::sha1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
  {Algorithm::md5, "", "d41d8cd98f00b204e9800998ecf8427e"},
  {Algorithm::md5, "a", "0cc175b9c0f1b6a831c399e269772661"},
  {Algorithm::md5, "abc", "900150983cd24fb0d6963f7d28e17f72"},
  {Algorithm::blake2b512,
   "",
   "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419d25e1031afee585313896444934eb04b903a685b1448b755d56"
   "f7"
   "01afe9be2ce"},
  {Algorithm::blake2b512,
   "a",
   "333fcb4ee1aa7c115355ec66ceac917c8bfd815bf7587d325aec1864edd24e34d5abe2c6b1b5ee3face62fed78dbef802f2a85cb91d455a8f52"
   "49"
   "d330853cb3c"},
  {Algorithm::blake2b512,
   "abc",
   "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92"
   "38"
   "6edd4009923"},
};

Expected<FileDigest>
digest_file(Hasher& hasher, const std::string& path)
{
  return digest_path(hasher, path, nullptr);
}

TEST(Hasher, KnownAnswersInMemoryAndFromFilesWithEveryStrategy)
{
  TempDir dir;
  for (const auto& answer : k_known_answers) {
    SCOPED_TRACE(std::string(algorithm_name(answer.algorithm)) + " of '" + answer.input + "'");
    Hasher hasher(answer.algorithm);
    auto hex = hasher.digest_bytes(answer.input);
    ASSERT_TRUE(hex);
    EXPECT_EQ(*hex, answer.hex);
    test::write_file(dir / "input", answer.input);
    for (const auto strategy : {ReadStrategy::automatic, ReadStrategy::mmap, ReadStrategy::ahead, ReadStrategy::read}) {
      Hasher file_hasher(answer.algorithm, strategy);
      auto file = digest_file(file_hasher, dir / "input");
      ASSERT_TRUE(file) << file.error().message;
      EXPECT_EQ(file->hex, answer.hex);
      EXPECT_EQ(file->size, answer.input.size());
    }
  }
}

TEST(Hasher, SizesAroundTheReadBufferAndTheMmapThresholdAgreeAcrossStrategies)
{
  TempDir dir;
  const size_t rb = k_read_buffer_size;
  // Where mmap and read() were compared when the threshold was measured.
  const size_t mt = 256 * 1024;
  const size_t sizes[] = {0,
                          1,
                          4095,
                          4096,
                          4097,
                          rb - 1,
                          rb,
                          rb + 1,
                          2 * rb + 1,
                          mt - 1,
                          mt,
                          mt + 1,
                          4 * 1024 * 1024 + 5,
                          // Chunks and batches of the mapping prepared ahead, and the threshold.
                          k_ahead_chunk - 1,
                          k_ahead_chunk + 1,
                          16 * k_ahead_chunk + 7};
  for (const size_t size : sizes) {
    const std::string bytes = test::pattern_bytes(size);
    test::write_file(dir / "input", bytes);
    for (const Algorithm algorithm : k_all_algorithms) {
      SCOPED_TRACE(std::string(algorithm_name(algorithm)) + " of " + std::to_string(size) + " bytes");
      Hasher reference(algorithm);
      const auto expected = reference.digest_bytes(bytes);
      ASSERT_TRUE(expected);
      for (const auto strategy :
           {ReadStrategy::automatic, ReadStrategy::mmap, ReadStrategy::ahead, ReadStrategy::read}) {
        Hasher hasher(algorithm, strategy);
        auto file = digest_file(hasher, dir / "input");
        ASSERT_TRUE(file) << file.error().message;
        EXPECT_EQ(file->hex, *expected);
        EXPECT_EQ(file->size, size);
      }
    }
  }
}

// Beyond the window the mapping is prepared ahead by (the second thread
// then waits for the hasher) and past the batches it is released in.
TEST(Hasher, MappingAheadPastItsWindowAgreesWithReading)
{
  TempDir dir;
  for (const uint64_t size : {k_ahead_threshold, (k_ahead_window + 9) * k_ahead_chunk + 3}) {
    SCOPED_TRACE(std::to_string(size) + " bytes");
    test::write_file(dir / "input", test::pattern_bytes(size));
    Hasher reader(Algorithm::sha256, ReadStrategy::read);
    const auto expected = digest_file(reader, dir / "input");
    ASSERT_TRUE(expected) << expected.error().message;
    for (const auto strategy : {ReadStrategy::automatic, ReadStrategy::ahead}) {
      Hasher hasher(Algorithm::sha256, strategy);
      auto file = digest_file(hasher, dir / "input");
      ASSERT_TRUE(file) << file.error().message;
      EXPECT_EQ(file->hex, expected->hex);
    }
  }
}

// A file cut short after it was opened and measured, before a byte is read:
// the mapping covers the old size, so the hasher's access past the new end
// raises SIGBUS, which must become an error naming the truncation, never a
// crash or a digest. Deterministic: the cut happens before the digest starts.
TEST(Hasher, FileTruncatedAfterOpeningIsAnErrorNotACrash)
{
  TempDir dir;
  const std::string path = dir / "shrunk";
  for (const auto strategy : {ReadStrategy::ahead, ReadStrategy::mmap, ReadStrategy::read}) {
    SCOPED_TRACE(static_cast<int>(strategy));
    test::write_file(path, test::pattern_bytes(4 * k_ahead_chunk));
    auto file = open_regular_file(path);
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(k_ahead_chunk / 2)), 0);
    Hasher hasher(Algorithm::sha256, strategy);
    auto hex = hasher.digest_open_file(*file);
    ASSERT_FALSE(hex) << "a digest of a file that shrank while it was read: " << *hex;
    EXPECT_TRUE(hex.error().message.find("truncated") != std::string::npos
                || hex.error().message.find("changed") != std::string::npos)
      << hex.error().message;
    // The same hasher is whole again afterwards (its signal state restored).
    auto again = digest_path(hasher, path, nullptr);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->size, k_ahead_chunk / 2);
  }
}

// A file cut short by another thread at a moment the scheduler picks, while
// it is digested through the whole path (open, measure, map): the answer is
// an error naming the file, the digest of the short file (cut before it was
// opened) or of the whole file (cut after the last byte was hashed), never a
// crash and never any other digest.
TEST(Hasher, FileTruncatedWhileMappedIsAnErrorNotACrash)
{
  TempDir dir;
  const std::string path = dir / "shrinking";
  const uint64_t size = 128 * k_ahead_chunk;
  const uint64_t short_size = k_ahead_chunk;
  const std::string bytes = test::pattern_bytes(size);
  Hasher reference(Algorithm::sha256);
  const auto short_hex = reference.digest_bytes(std::string_view(bytes).substr(0, short_size));
  const auto whole_hex = reference.digest_bytes(bytes);
  ASSERT_TRUE(short_hex);
  ASSERT_TRUE(whole_hex);
  for (const auto strategy : {ReadStrategy::ahead, ReadStrategy::mmap}) {
    for (const int delay_ms : {0, 5, 20}) {
      SCOPED_TRACE(std::string(strategy == ReadStrategy::ahead ? "ahead" : "mmap") + ", cut after "
                   + std::to_string(delay_ms) + " ms");
      test::write_file(path, bytes);
      std::thread cutter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(short_size)), 0);
      });
      Hasher hasher(Algorithm::sha256, strategy);
      auto file = digest_path(hasher, path, nullptr);
      cutter.join();
      if (file) {
        if (file->size == short_size) {
          EXPECT_EQ(file->hex, *short_hex);
        } else {
          EXPECT_EQ(file->size, size);
          EXPECT_EQ(file->hex, *whole_hex);
        }
      } else {
        EXPECT_NE(file.error().message.find(path), std::string::npos) << file.error().message;
        EXPECT_TRUE(file.error().message.find("truncated") != std::string::npos
                    || file.error().message.find("changed") != std::string::npos)
          << file.error().message;
      }
    }
  }
}

// 4 GiB of zeros then "xyz": catches 32-bit lengths anywhere on the path.
// Expected value: `(head -c 4294967296 /dev/zero; printf xyz) | sha256sum`.
TEST(Hasher, SparseFileOverFourGibibytes)
{
  TempDir dir;
  const std::string path = dir / "sparse";
  {
    util::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    ASSERT_TRUE(fd);
    constexpr off_t k_four_gib = off_t{4} * 1024 * 1024 * 1024;
    ASSERT_EQ(::pwrite(fd.get(), "xyz", 3, k_four_gib), 3);
  }
  const std::string expected = "3f2b9f5ab3792542b76e2deb6039c0beb8dbe514ec5184adb13af5e8b8703591";
  for (const auto strategy : {ReadStrategy::ahead, ReadStrategy::read}) {
    Hasher hasher(Algorithm::sha256, strategy);
    auto file = digest_file(hasher, path);
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_EQ(file->hex, expected);
    EXPECT_EQ(file->size, 4294967299u);
  }
}

TEST(Hasher, ReusedContextGivesTheSameAnswers)
{
  Hasher hasher(Algorithm::sha256);
  const auto first = hasher.digest_bytes("abc");
  const auto other = hasher.digest_bytes("something else");
  const auto again = hasher.digest_bytes("abc");
  ASSERT_TRUE(first && other && again);
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, *other);
}

TEST(Hasher, StreamsAreReadToTheEnd)
{
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  util::Fd read_end(fds[0]);
  {
    util::Fd write_end(fds[1]);
    ASSERT_TRUE(util::write_all(write_end.get(), "abc"));
  }
  Hasher hasher(Algorithm::sha256);
  uint64_t size = 0;
  auto hex = hasher.digest_stream(read_end.get(), &size);
  ASSERT_TRUE(hex);
  EXPECT_EQ(*hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(size, 3u);
}

void
expect_refused(const std::string& path, const std::string& reason)
{
  Hasher hasher(Algorithm::sha256);
  auto result = digest_file(hasher, path);
  ASSERT_FALSE(result) << path << " was digested";
  EXPECT_NE(result.error().message.find(path), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find(reason), std::string::npos) << result.error().message;
}

TEST(Hasher, RefusesWhatIsNotARegularFileBeforeReading)
{
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  ASSERT_EQ(::mkdir((dir / "subdir").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("nowhere", (dir / "dangling").c_str()), 0);
  ASSERT_EQ(::symlink("loop2", (dir / "loop1").c_str()), 0);
  ASSERT_EQ(::symlink("loop1", (dir / "loop2").c_str()), 0);
  expect_refused(dir / "missing", "No such file or directory");
  expect_refused(dir / "fifo", "FIFO"); // would block forever if read
  expect_refused(dir / "subdir", "is a directory");
  expect_refused(dir / "dangling", "dangling symbolic link");
  expect_refused(dir / "loop1", "symbolic link loop");
  expect_refused("/dev/null", "character device");
}

TEST(DigestFiles, ParallelResultsAreInInputOrderAndMatchSequential)
{
  TempDir dir;
  std::vector<std::string> paths;
  for (int i = 0; i < 40; ++i) {
    paths.push_back(dir / ("f" + std::to_string(i)));
    test::write_file(paths.back(), test::pattern_bytes(static_cast<size_t>(i) * 7919));
  }
  paths.push_back(dir / "missing");
  DigestOptions sequential;
  sequential.jobs = 1;
  DigestOptions parallel;
  parallel.jobs = 4;
  const auto one = digest_files(paths, sequential);
  const auto many = digest_files(paths, parallel);
  ASSERT_EQ(one.size(), paths.size());
  ASSERT_EQ(many.size(), paths.size());
  for (size_t i = 0; i + 1 < paths.size(); ++i) {
    ASSERT_TRUE(one[i] && many[i]);
    EXPECT_EQ(one[i]->hex, many[i]->hex) << paths[i];
    Hasher hasher(Algorithm::sha256);
    EXPECT_EQ(many[i]->hex, *hasher.digest_bytes(test::pattern_bytes(i * 7919)));
  }
  EXPECT_FALSE(one.back());
  EXPECT_FALSE(many.back());
}

// A build tool run's links look at a file once: what the first found is
// what the later ones get, even once the file has changed (the next run
// sees the change); what a step produced is never taken from the memo, and
// nothing that failed is kept.
TEST(BuildMemo, AFileIsLookedAtOnceARunAndProductsAlways)
{
  TempDir dir;
  const std::string product = dir / "product";
  const std::string input = dir / "input";
  const std::string missing = dir / "missing";
  test::write_file(product, "product 1");
  test::write_file(input, "input 1");
  Hasher hasher(Algorithm::sha256);
  const auto hex_of = [&](const std::string& bytes) { return *hasher.digest_bytes(bytes); };

  BuildMemo::enable(true);
  EXPECT_EQ(BuildMemo::of("", Algorithm::sha256), nullptr) << "no build tool's run, no memo";
  const auto run = BuildMemo::of("4242:77", Algorithm::sha256);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(BuildMemo::of("4242:77", Algorithm::sha256), run) << "one memo a run";
  EXPECT_NE(BuildMemo::of("4242:77", Algorithm::blake2b512), run) << "and a digest algorithm";
  DigestOptions options;
  options.jobs = 1;
  options.memo = run.get();
  options.memo_first = 1;
  const std::vector<std::string> paths{product, input, missing};
  auto first = digest_files(paths, options);
  ASSERT_TRUE(first[0] && first[1]);
  EXPECT_FALSE(first[2]);
  EXPECT_EQ(run->size(), 1U) << "the product and the missing file are not kept";

  test::write_file(product, "product 2");
  test::write_file(input, "input 2, longer");
  auto again = digest_files(paths, options);
  ASSERT_TRUE(again[0] && again[1]);
  EXPECT_EQ(again[0]->hex, hex_of("product 2")) << "a product is digested every time";
  EXPECT_EQ(again[1]->hex, hex_of("input 1")) << "an input, once a run";
  EXPECT_EQ(again[1]->size, 7U);
  EXPECT_FALSE(again[2]);

  const auto next_run = BuildMemo::of("4243:78", Algorithm::sha256);
  ASSERT_NE(next_run, run);
  options.memo = next_run.get();
  auto next = digest_files(paths, options);
  ASSERT_TRUE(next[1]);
  EXPECT_EQ(next[1]->hex, hex_of("input 2, longer")) << "the next run looks again";

  // The oldest runs are forgotten; a process without a recorder keeps none.
  for (int i = 0; i < 4; ++i) {
    (void)BuildMemo::of("5000:" + std::to_string(i), Algorithm::sha256);
  }
  EXPECT_NE(BuildMemo::of("4242:77", Algorithm::sha256), run);
  BuildMemo::enable(false);
  EXPECT_EQ(BuildMemo::of("4243:78", Algorithm::sha256), nullptr);
}

} // namespace
} // namespace fingerprint::digest
