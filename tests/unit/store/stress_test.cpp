#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/util/text.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <functional>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace fingerprint::store {
namespace {

using test::TempDir;

// Forks `count` writer processes, each opening the store at `root` and
// calling `write(store, writer)` once; a writer exits 0 when it returned
// true. An ASSERT here ends the calling test (gtest's fatal-failure rule).
std::vector<pid_t>
start_writers(const std::string& root, int count, const std::function<bool(const DirectoryStore&, int)>& write)
{
  std::vector<pid_t> writers;
  for (int w = 0; w < count; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      auto store = DirectoryStore::open_for_writing(root);
      ::_exit(store && write(*store, w) ? 0 : 1);
    }
    EXPECT_GE(pid, 0) << "fork";
    if (pid > 0) {
      writers.push_back(pid);
    }
  }
  return writers;
}

// 32 writer processes append to one shared artifact and each to one of its
// own, while another process compacts the shared log in a loop: every event
// written is read back exactly once, none torn. Bounded: each writer
// appends a fixed number of events.
TEST(StoreStress, ThirtyTwoWriterProcessesAndACompactorLoseNothing)
{
  TempDir dir;
  const std::string root = dir / "store";
  ASSERT_TRUE(DirectoryStore::open_for_writing(root));
  constexpr int k_writers = 32;
  constexpr int k_events = 150;
  const DigestKey shared{digest::Algorithm::sha256, std::string(64, 'a')};
  auto own_key = [](int writer) {
    char hex[65];
    std::snprintf(hex, sizeof(hex), "%064x", writer + 1);
    return DigestKey{digest::Algorithm::sha256, hex};
  };
  auto event_for = [](const DigestKey& key, int writer, int i) {
    Event event;
    event.event = EventKind::consumed;
    event.digest = key.str();
    event.product = "sha256:" + std::string(64, 'f');
    event.size = 1;
    event.path = "/lib/shared.so";
    event.project = "writer" + std::to_string(writer);
    event.target = "t";
    event.build = std::to_string(i); // distinct: compaction has nothing to fold
    event.build_dir = "/b";
    event.host = "h";
    event.time = "2026-11-30T00:00:00.000Z";
    return event;
  };

  const pid_t compactor = ::fork();
  ASSERT_GE(compactor, 0);
  if (compactor == 0) {
    // Until the parent kills it: compaction runs for as long as writers do.
    auto store = DirectoryStore::open_for_writing(root);
    while (store) {
      (void)store->compact(shared, true); // rename a new log over it each time
      // Paced like a real compaction, which never rewrites one log back to
      // back: unpaced, 32 appenders on 2 busy cores could each lose the
      // race 1,000 times and give up (appender starvation, noted on issue 5).
      ::usleep(20000);
    }
    ::_exit(1);
  }
  const std::vector<pid_t> writers = start_writers(root, k_writers, [&](const DirectoryStore& store, int w) {
    for (int i = 0; i < k_events; ++i) {
      if (!store.append({event_for(shared, w, i), event_for(own_key(w), w, i)})) {
        return false;
      }
    }
    return true;
  });
  for (const pid_t pid : writers) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  }
  ::kill(compactor, SIGKILL);
  int compactor_status = 0;
  ::waitpid(compactor, &compactor_status, 0);
  EXPECT_TRUE(WIFSIGNALED(compactor_status)) << "the compactor stopped by itself: it could not open the store";

  auto store = DirectoryStore::open_for_reading(root);
  ASSERT_TRUE(store);
  auto log = store->read_log(shared);
  ASSERT_TRUE(log);
  EXPECT_TRUE(log->problems.empty());
  EXPECT_FALSE(log->torn_tail);
  EXPECT_EQ(log->events.size(), static_cast<size_t>(k_writers * k_events)) << "written vs read back";
  std::set<std::pair<std::string, std::string>> unique;
  for (const auto& event : log->events) {
    unique.emplace(event.project, event.build);
  }
  EXPECT_EQ(unique.size(), log->events.size()) << "an event was duplicated";
  for (int w = 0; w < k_writers; ++w) {
    auto own = store->read_log(own_key(w));
    ASSERT_TRUE(own);
    EXPECT_EQ(own->events.size(), static_cast<size_t>(k_events)) << "writer " << w;
  }
}

// fsck --repair in a loop beside 8 writers, each appending events of one
// artifact to its log and its build's index: an append between its log and
// its index looks one-sided, and a repair that "completed" it would leave
// the event twice in the index once the append finishes. Holding the change
// lock exclusively, repair waits for appends in progress, and finds nothing.
TEST(StoreStress, FsckRepairBesideWritersAddsNothingTwice)
{
  TempDir dir;
  const std::string root = dir / "store";
  ASSERT_TRUE(DirectoryStore::open_for_writing(root));
  constexpr int k_writers = 8;
  constexpr int k_events = 400;
  const std::vector<pid_t> writers = start_writers(root, k_writers, [&](const DirectoryStore& store, int w) {
    for (int i = 0; i < k_events; ++i) {
      Event event;
      event.event = EventKind::produced;
      char hex[65];
      std::snprintf(hex, sizeof(hex), "%064x", w * 1000 + i);
      event.digest = std::string("sha256:") + hex;
      event.size = 1;
      event.path = "/b/out";
      event.project = "p" + std::to_string(w);
      event.target = "t";
      event.build = "1";
      event.build_dir = "/b";
      event.host = "h";
      event.time = util::format_rfc3339(util::now_ns()); // as recent as a real append's
      if (!store.append({event})) {
        return false;
      }
      ::usleep(i % 2 == 0 ? 0 : 1000); // a link's pace, give or take
    }
    return true;
  });
  auto store = DirectoryStore::open_for_updating(root);
  ASSERT_TRUE(store);
  size_t repairs = 0;
  for (bool running = true; running;) {
    auto report = store->fsck({.repair = true});
    ASSERT_TRUE(report) << report.error().message;
    for (const auto& finding : report->findings) {
      ADD_FAILURE() << "fsck beside writers: " << finding.file << ": " << finding.problem;
    }
    ++repairs;
    running = false;
    for (const pid_t pid : writers) {
      running = running || ::waitpid(pid, nullptr, WNOHANG) == 0;
    }
  }
  for (const pid_t pid : writers) {
    ::waitpid(pid, nullptr, 0);
  }
  for (int w = 0; w < k_writers; ++w) {
    auto index = store->read_build({"p" + std::to_string(w), "1"});
    ASSERT_TRUE(index);
    std::set<std::string> digests;
    for (const auto& event : index->events) {
      EXPECT_TRUE(digests.insert(event.digest).second) << "twice in the index of p" << w << ": " << event.digest;
    }
    EXPECT_EQ(digests.size(), static_cast<size_t>(k_events)) << "p" << w;
  }
  std::printf("%zu fsck --repair runs beside %d writers of %d events each\n", repairs, k_writers, k_events);
}

} // namespace
} // namespace fingerprint::store
