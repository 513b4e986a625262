#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/format.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <atomic>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fingerprint::store {
namespace {

using test::TempDir;

DigestKey
key_of(char c)
{
  return DigestKey{digest::Algorithm::sha256, std::string(64, c)};
}

Event
event(EventKind kind, char digest, const std::string& project, const std::string& build, char product = 'f')
{
  Event e;
  e.event = kind;
  e.digest = key_of(digest).str();
  e.size = 10;
  e.path = "/build/" + project + "/" + std::string(1, digest);
  e.project = project;
  e.target = project + "_target";
  e.build = build;
  e.build_dir = "/build/" + project;
  e.host = "host";
  e.time = "2026-11-30T09:00:00.000Z";
  if (kind == EventKind::consumed) {
    e.product = key_of(product).str();
  }
  return e;
}

DirectoryStore
writable(const TempDir& dir)
{
  auto store = DirectoryStore::open_for_writing(dir / "store");
  EXPECT_TRUE(store) << store.error().message;
  return std::move(*store);
}

TEST(DirectoryStore, AppendsLandInTheArtifactLogAndTheBuildIndex)
{
  TempDir dir;
  const auto store = writable(dir);
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "up", "1"),
                            event(EventKind::consumed, 'a', "app", "7", 'b'),
                            event(EventKind::produced, 'b', "app", "7")}));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "store/fingerprint-store.json"));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / ("store/" + key_of('a').log_path())));

  auto record = load_record(store, key_of('a'));
  ASSERT_TRUE(record);
  ASSERT_EQ(record->producers.size(), 1u);
  ASSERT_EQ(record->consumers.size(), 1u);
  EXPECT_EQ(record->producers[0].project, "up");
  EXPECT_EQ(record->consumers[0].product, key_of('b').str());
  EXPECT_EQ(record->names, (std::vector<std::string>{"/build/up/a", "/build/app/a"}));

  auto builds = store.list_builds();
  ASSERT_TRUE(builds);
  ASSERT_EQ(builds->size(), 2u);
  EXPECT_EQ((*builds)[0].project, "app");
  EXPECT_EQ((*builds)[1].project, "up");
  auto app = store.read_build((*builds)[0]);
  ASSERT_TRUE(app);
  EXPECT_EQ(app->events.size(), 2u);

  // Read back by a second, read-only handle: no lock, same answer.
  auto reader = DirectoryStore::open_for_reading(dir / "store");
  ASSERT_TRUE(reader);
  auto again = load_record(*reader, key_of('a'));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->consumers.size(), 1u);
}

std::string
read_text(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A batch as append() wrote it: `bytes` appended to `name` in `dir`.
detail::Appended
appended_to(const TempDir& dir, const std::string& name, const std::string& bytes)
{
  detail::Appended appended;
  appended.relative = name;
  const util::Fd fd(::open((dir / name).c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666));
  struct stat st
  {};
  EXPECT_EQ(::fstat(fd.get(), &st), 0);
  appended.device = st.st_dev;
  appended.inode = st.st_ino;
  appended.start = st.st_size;
  EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  appended.bytes = bytes;
  return appended;
}

TEST(DirectoryStore, ABatchIsTakenBackWhereverItIsInItsLog)
{
  TempDir dir;
  const util::Fd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));

  // Last in its log: cut off. Alone in its log: the log goes.
  test::write_file(dir / "tail", "before\n");
  auto tail = appended_to(dir, "tail", "ours 1\nours 2\n");
  ASSERT_TRUE(detail::take_back_appended(root.get(), tail));
  EXPECT_EQ(read_text(dir / "tail"), "before\n");
  auto alone = appended_to(dir, "alone", "ours\n");
  ASSERT_TRUE(detail::take_back_appended(root.get(), alone));
  EXPECT_FALSE(std::filesystem::exists(dir / "alone"));

  // Another writer appended after it: the log is rewritten without it.
  test::write_file(dir / "middle", "before\n");
  auto middle = appended_to(dir, "middle", "ours 1\nours 2\n");
  {
    std::ofstream(dir / "middle", std::ios::app) << "after\n";
  }
  ASSERT_TRUE(detail::take_back_appended(root.get(), middle));
  EXPECT_EQ(read_text(dir / "middle"), "before\nafter\n");

  // A torn line before it: the newline that closed it stays.
  test::write_file(dir / "torn", "{\"v\":1,\"ev");
  auto torn = appended_to(dir, "torn", "\nours\n");
  {
    std::ofstream(dir / "torn", std::ios::app) << "after\n";
  }
  ASSERT_TRUE(detail::take_back_appended(root.get(), torn));
  EXPECT_EQ(read_text(dir / "torn"), "{\"v\":1,\"ev\nafter\n");

  // A compaction rewrote the log meanwhile (a new file, its lines in
  // another order, one of ours folded away): each line of ours that is
  // left goes, and a line that merely contains one of ours stays.
  test::write_file(dir / "compacted", "before\n");
  auto compacted = appended_to(dir, "compacted", "ours 1\nours 2\n");
  test::write_file(dir / "compacted.new", "ours 2\nxours 2\nbefore\nafter\n");
  std::filesystem::rename(dir / "compacted.new", dir / "compacted");
  ASSERT_TRUE(detail::take_back_appended(root.get(), compacted));
  EXPECT_EQ(read_text(dir / "compacted"), "xours 2\nbefore\nafter\n");
}

TEST(DirectoryStore, ACallOfManyLogsNeedsNoDescriptorPerLog)
{
  TempDir dir;
  const auto store = writable(dir);
  // One link that consumed 300 inputs: 301 logs and an index, under a
  // descriptor limit of 64.
  std::vector<Event> events{event(EventKind::produced, 'f', "app", "1")};
  for (int i = 0; i < 300; ++i) {
    Event input = event(EventKind::consumed, 'a', "app", "1");
    char hex[65];
    std::snprintf(hex, sizeof(hex), "%064x", i);
    input.digest = "sha256:" + std::string(hex);
    events.push_back(input);
  }
  struct rlimit before
  {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  struct rlimit low = before;
  low.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto appended = store.append(events);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  ASSERT_TRUE(appended) << appended.error().message;
  auto index = store.read_build({"app", "1"});
  ASSERT_TRUE(index);
  EXPECT_EQ(index->events.size(), 301u);
}

TEST(DirectoryStore, AMissingStoreReadsAsEmptyAndIsNotCreatedByReaders)
{
  TempDir dir;
  auto store = DirectoryStore::open_for_reading(dir / "nothing");
  ASSERT_TRUE(store);
  auto record = load_record(*store, key_of('a'));
  ASSERT_TRUE(record);
  EXPECT_FALSE(record->recorded());
  EXPECT_FALSE(std::filesystem::exists(dir / "nothing"));
}

TEST(DirectoryStore, ANewerFormatIsRefusedWithTheFileNamed)
{
  TempDir dir;
  {
    writable(dir);
  }
  test::write_file(dir / "store/fingerprint-store.json", R"({"format": 99})");
  auto reader = DirectoryStore::open_for_reading(dir / "store");
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().message.find("fingerprint-store.json"), std::string::npos);
  EXPECT_NE(reader.error().message.find("newer"), std::string::npos);
  auto writer = DirectoryStore::open_for_writing(dir / "store");
  ASSERT_FALSE(writer);
  test::write_file(dir / "store/fingerprint-store.json", "{ not json");
  EXPECT_FALSE(DirectoryStore::open_for_reading(dir / "store"));
}

TEST(DirectoryStore, ATornLastLineIsIgnoredAndTheNextAppendStartsAFreshLine)
{
  TempDir dir;
  const auto store = writable(dir);
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "up", "1")}));
  const std::string log = dir / ("store/" + key_of('a').log_path());
  const std::string full = test::read_file(log);
  // A writer killed after half of its line.
  const std::string torn = serialize(event(EventKind::consumed, 'a', "app", "2"));
  test::write_file(log, full + torn.substr(0, torn.size() / 2));

  auto before = store.read_log(key_of('a'));
  ASSERT_TRUE(before);
  EXPECT_TRUE(before->torn_tail);
  EXPECT_TRUE(before->problems.empty());
  EXPECT_EQ(before->events.size(), 1u);

  ASSERT_TRUE(store.append({event(EventKind::consumed, 'a', "app", "3")}));
  auto after = store.read_log(key_of('a'));
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->torn_tail);
  ASSERT_EQ(after->events.size(), 2u) << "the new event was glued to the torn line";
  EXPECT_EQ(after->events[1].build, "3");
  ASSERT_EQ(after->problems.size(), 1u) << "the torn line is now a complete, reported bad line";
  EXPECT_EQ(after->problems[0].line, 2u);
}

TEST(DirectoryStore, CompactionDropsDuplicatesKeepsOrderAndTheEarliest)
{
  TempDir dir;
  const auto store = writable(dir);
  auto first = event(EventKind::consumed, 'a', "app", "7");
  auto repeat = first;
  repeat.time = "2026-11-30T10:00:00.000Z";
  auto other = event(EventKind::consumed, 'a', "app", "8");
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "up", "1"), first, other, repeat, first}));
  auto result = store.compact(key_of('a'));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->events_before, 5u);
  EXPECT_EQ(result->events_after, 3u);
  auto log = store.read_log(key_of('a'));
  ASSERT_TRUE(log);
  ASSERT_EQ(log->events.size(), 3u);
  EXPECT_EQ(log->events[0].event, EventKind::produced);
  EXPECT_EQ(log->events[1], first);
  EXPECT_EQ(log->events[2], other);
  // No temporary file left behind.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
         std::filesystem::path(dir / ("store/" + key_of('a').log_path())).parent_path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(DirectoryStore, CompactionRefusesALogWithUnreadableLines)
{
  TempDir dir;
  const auto store = writable(dir);
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "up", "1")}));
  const std::string log = dir / ("store/" + key_of('a').log_path());
  test::write_file(log, test::read_file(log) + "garbage\n");
  const std::string bytes = test::read_file(log);
  auto result = store.compact(key_of('a'));
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("unreadable lines"), std::string::npos);
  EXPECT_EQ(test::read_file(log), bytes) << "compaction changed a log it refused";
}

TEST(DirectoryStore, AppendsDuringCompactionAreNeverLost)
{
  TempDir dir;
  const auto store = writable(dir);
  constexpr int k_writers = 4;
  constexpr int k_per_writer = 200;
  std::atomic<bool> done{false};
  std::thread compactor([&] {
    while (!done) {
      auto result = store.compact(key_of('a'));
      // Before the first append there is nothing to compact yet.
      if (!result) {
        EXPECT_NE(result.error().message.find("no such log"), std::string::npos) << result.error().message;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < k_writers; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < k_per_writer; ++i) {
        // Distinct builds, so compaction has nothing to fold: every event
        // must survive.
        EXPECT_TRUE(store.append({event(EventKind::consumed, 'a', "app", std::to_string(w * 1000 + i))}));
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  done = true;
  compactor.join();
  auto log = store.read_log(key_of('a'));
  ASSERT_TRUE(log);
  EXPECT_EQ(log->events.size(), static_cast<size_t>(k_writers * k_per_writer));
  EXPECT_TRUE(log->problems.empty());
  EXPECT_FALSE(log->torn_tail);
}

TEST(DirectoryStore, ASymlinkInsideTheStoreIsRefusedNotFollowed)
{
  TempDir dir;
  const auto store = writable(dir);
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "up", "1")}));
  // Replace objects/sha256 by a link to a directory outside the store.
  std::filesystem::create_directories(dir / "outside");
  std::filesystem::rename(dir / "store/objects/sha256", dir / "moved");
  std::filesystem::create_directory_symlink(dir / "outside", dir / "store/objects/sha256");
  auto appended = store.append({event(EventKind::produced, 'b', "up", "2")});
  ASSERT_FALSE(appended);
  EXPECT_NE(appended.error().message.find("symbolic links are not followed"), std::string::npos)
    << appended.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(dir / "outside"));
  EXPECT_FALSE(store.read_log(key_of('a')));

  // The store root itself may be a symlink.
  std::filesystem::remove(dir / "store/objects/sha256");
  std::filesystem::rename(dir / "moved", dir / "store/objects/sha256");
  std::filesystem::create_directory_symlink(dir / "store", dir / "link");
  auto through_link = DirectoryStore::open_for_reading(dir / "link");
  ASSERT_TRUE(through_link);
  auto record = load_record(*through_link, key_of('a'));
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->recorded());
}

TEST(DirectoryStore, ProjectAndBuildNamesBecomeSafeComponents)
{
  for (const std::string name : {"", ".", "..", "a/b", "../../etc", "my project", "100%", "é", ".hidden", "v1.2"}) {
    const auto encoded = DirectoryStore::encode_component(name);
    EXPECT_TRUE(util::is_safe_component(encoded)) << name << " -> " << encoded;
    EXPECT_EQ(encoded.find('/'), std::string::npos);
    EXPECT_NE(encoded[0], '.');
    EXPECT_EQ(DirectoryStore::decode_component(encoded), name);
  }
  EXPECT_EQ(DirectoryStore::encode_component("v1.2-rc_3+x"), "v1.2-rc_3+x");

  TempDir dir;
  const auto store = writable(dir);
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "../evil", "../../x")}));
  EXPECT_FALSE(std::filesystem::exists(dir / "evil"));
  auto builds = store.list_builds();
  ASSERT_TRUE(builds);
  ASSERT_EQ(builds->size(), 1u);
  EXPECT_EQ((*builds)[0].project, "../evil");
  EXPECT_EQ((*builds)[0].build, "../../x");
}

TEST(Record, TransitiveConsumersFollowProductsOnceEach)
{
  TempDir dir;
  const auto store = writable(dir);
  // a -> b -> c, and c also consumes a; a cycle c -> a must end.
  ASSERT_TRUE(store.append({event(EventKind::produced, 'a', "lib", "1"),
                            event(EventKind::consumed, 'a', "app", "1", 'b'),
                            event(EventKind::consumed, 'b', "tool", "1", 'c'),
                            event(EventKind::consumed, 'a', "tool", "1", 'c'),
                            event(EventKind::consumed, 'c', "weird", "1", 'a')}));
  std::vector<LogProblem> problems;
  auto direct = store.find_consumers(key_of('a'), false, problems);
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->size(), 2u);
  auto all = store.find_consumers(key_of('a'), true, problems);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].depth, 1);
  EXPECT_EQ((*all)[1].depth, 1);
  EXPECT_EQ((*all)[2].event.project, "tool");
  EXPECT_EQ((*all)[2].depth, 2);
  EXPECT_EQ((*all)[3].event.project, "weird");
  EXPECT_TRUE(problems.empty());
}

// What an appender sees of a log's last line: read from a small window
// when the line fits in it, from the whole 32 KiB one when it does not.
TEST(LookAtTail, TheLastLineWholeWhateverItsLength)
{
  TempDir dir;
  const auto look = [&](const std::string& text) {
    const std::string path = dir / "log.jsonl";
    test::write_file(path, text);
    util::Fd fd(::open(path.c_str(), O_RDONLY));
    EXPECT_TRUE(fd);
    return detail::look_at_tail(fd.get(), static_cast<off_t>(text.size()), false);
  };
  Event long_one = event(EventKind::produced, 'a', "up", "1");
  long_one.path = "/build/" + std::string(6000, 'p'); // a line longer than the first window
  const std::string good = serialize(long_one) + "\n";
  const std::string garbage = std::string(9000, 'x') + "\n";
  EXPECT_EQ(look(garbage + good), std::nullopt) << "a long readable last line was taken in part";
  EXPECT_EQ(look(good), std::nullopt) << "a log of one long line";
  const auto bad = look(good + garbage);
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->find("last line is unreadable"), std::string::npos) << *bad;
  const auto bad_short = look(good + "{\"event\":\n");
  ASSERT_TRUE(bad_short);
  EXPECT_NE(bad_short->find("last line is unreadable"), std::string::npos) << *bad_short;
  const auto too_long = look(good + std::string(40000, 'y') + "\n");
  ASSERT_TRUE(too_long);
  EXPECT_NE(too_long->find("longer than 32 KiB"), std::string::npos) << *too_long;
}

} // namespace
} // namespace fingerprint::store
