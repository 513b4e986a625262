#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/directory_store.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace fingerprint::store {
namespace {

using test::TempDir;

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
  std::vector<pid_t> writers;
  for (int w = 0; w < k_writers; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = DirectoryStore::open_for_writing(root);
      bool ok = static_cast<bool>(store);
      for (int i = 0; ok && i < k_events; ++i) {
        ok = static_cast<bool>(store->append({event_for(shared, w, i), event_for(own_key(w), w, i)}));
      }
      ::_exit(ok ? 0 : 1);
    }
    writers.push_back(pid);
  }
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

} // namespace
} // namespace fingerprint::store
