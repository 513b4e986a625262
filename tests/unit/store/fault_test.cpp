#include <fingerprint/store/directory_store.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <csignal>
#include <fcntl.h>
#include <map>
#include <random>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fingerprint::store {
namespace {

using test::TempDir;

constexpr int k_shared_keys = 3; // every writer appends to these; the compactor rewrites them
constexpr int k_own_keys = 4;    // one per writer slot; torn writes land here

DigestKey
key_of(int index)
{
  char hex[65];
  std::snprintf(hex, sizeof(hex), "%064x", 0xf00d0000 + index);
  return DigestKey{digest::Algorithm::sha256, hex};
}

// Events are told apart by their path: /<round>/<writer>/<sequence>.
Event
event_for(const DigestKey& key, const std::string& build, const std::string& id)
{
  Event event;
  event.event = EventKind::consumed;
  event.digest = key.str();
  event.product = "sha256:" + std::string(64, 'e');
  event.size = 1;
  event.path = id;
  event.project = "fault";
  event.target = "t";
  event.build = build;
  event.build_dir = "/b";
  event.host = "h";
  event.time = "2026-11-30T00:00:00.000Z";
  return event;
}

// A writer: appends batches of 1 to 40 events to shared and own logs until
// it is killed, and acknowledges each batch on `ack_fd` (a pipe: writes of
// at most PIPE_BUF bytes are atomic) only after append() returned.
[[noreturn]] void
writer(const std::string& root, int round, int slot, uint64_t seed, int ack_fd, bool tear)
{
  std::mt19937_64 random(seed);
  auto store = DirectoryStore::open_for_writing(root);
  if (!store) {
    ::_exit(2);
  }
  const std::string build = "r" + std::to_string(round) + "w" + std::to_string(slot);
  if (tear) {
    // A writer that dies mid-write: the front of a line and no more, as a
    // SIGKILL or a power cut during the kernel's copy leaves it. (A real
    // SIGKILL tears only writes that span pages; this makes the case
    // certain instead of rare.)
    const std::string line = serialize(event_for(key_of(k_shared_keys + slot), build, "/torn/" + build));
    if (!store->append({event_for(key_of(k_shared_keys + slot), build, "/before-torn/" + build)})) {
      ::_exit(3);
    }
    const std::string path = root + "/" + key_of(k_shared_keys + slot).log_path();
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    const size_t cut = 1 + random() % (line.size() - 2);
    const bool written = fd >= 0 && ::write(fd, line.data(), cut) == static_cast<ssize_t>(cut);
    ::_exit(written ? 0 : 2);
  }
  for (uint64_t sequence = 0;; ++sequence) {
    const size_t count = 1 + random() % 40;
    std::vector<Event> batch;
    std::string acks;
    for (size_t i = 0; i < count; ++i) {
      const std::string id = "/" + std::to_string(round) + "/" + std::to_string(slot) + "/" + std::to_string(sequence)
                             + "." + std::to_string(i);
      const int key = random() % 2 == 0 ? static_cast<int>(random() % k_shared_keys) : k_shared_keys + slot;
      batch.push_back(event_for(key_of(key), build, id));
      acks += id + "\n";
    }
    if (!store->append(batch)) {
      ::_exit(3); // nothing here may fail: the parent sees the exit status
    }
    if (::write(ack_fd, acks.data(), acks.size()) != static_cast<ssize_t>(acks.size())) {
      ::_exit(4);
    }
  }
}

// A compactor: rewrites the shared logs over and over until it is killed.
// A log with a torn line is refused (compaction never drops a line).
[[noreturn]] void
compactor(const std::string& root, uint64_t seed)
{
  std::mt19937_64 random(seed);
  auto store = DirectoryStore::open_for_writing(root);
  if (!store) {
    ::_exit(2);
  }
  for (;;) {
    (void)store->compact(key_of(static_cast<int>(random() % k_shared_keys)), true);
    ::usleep(static_cast<useconds_t>(random() % 3000));
  }
}

std::set<std::string>
split_lines(const std::string& text)
{
  std::set<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.insert(text.substr(start, end - start));
  }
  return lines;
}

// Each event id at most once in the artifact logs and once in the build
// indexes; returns the ids found in both.
struct Found
{
  std::set<std::string> in_logs;
  std::set<std::string> in_indexes;
  size_t duplicates = 0;
};

Found
read_everything(const DirectoryStore& store)
{
  Found found;
  for (int key = 0; key < k_shared_keys + k_own_keys; ++key) {
    auto log = store.read_log(key_of(key));
    EXPECT_TRUE(log) << (log ? "" : log.error().message);
    if (!log) {
      continue;
    }
    for (const auto& event : log->events) {
      found.duplicates += found.in_logs.insert(event.path).second ? 0 : 1;
    }
  }
  auto builds = store.list_builds();
  EXPECT_TRUE(builds);
  for (const auto& build : builds ? *builds : std::vector<BuildRef>{}) {
    auto index = store.read_build(build);
    EXPECT_TRUE(index) << (index ? "" : index.error().message);
    if (!index) {
      continue;
    }
    for (const auto& event : index->events) {
      found.duplicates += found.in_indexes.insert(event.path).second ? 0 : 1;
    }
  }
  return found;
}

// Writers and compactions are SIGKILLed at random moments, over and over
// (seeded: FINGERPRINT_FAULT_SEED replays a run). Afterwards every log still
// reads, fsck finds nothing but torn lines and leftover temporary files,
// every acknowledged event is there (in its artifact's log and in its
// build's index), nothing is there twice, and fsck --repair leaves a clean
// store that still holds every acknowledged event.
TEST(StoreFault, KillNineAtRandomMomentsLosesNothingAcknowledged)
{
  const char* seed_text = std::getenv("FINGERPRINT_FAULT_SEED");
  const uint64_t seed = seed_text != nullptr ? std::strtoull(seed_text, nullptr, 10) : 20261130;
  std::mt19937_64 random(seed);
  TempDir dir;
  const std::string root = dir / "store";
  ASSERT_TRUE(DirectoryStore::open_for_writing(root));

  constexpr int k_rounds = 60;
  constexpr int k_writers = k_own_keys;
  size_t kills = 0;
  size_t compactor_kills = 0;
  size_t torn_writers = 0;
  std::string acknowledged_text;
  for (int round = 0; round < k_rounds; ++round) {
    int ack[2];
    ASSERT_EQ(::pipe2(ack, O_CLOEXEC), 0);
    (void)::fcntl(ack[1], F_SETPIPE_SZ, 1 << 20);
    std::vector<pid_t> children;
    pid_t compactor_pid = -1;
    pid_t tearing_pid = -1;
    const int tearing_slot = round % 3 == 0 ? static_cast<int>(random() % k_writers) : -1;
    for (int slot = 0; slot <= k_writers; ++slot) {
      const uint64_t child_seed = random();
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(ack[0]);
        if (slot == k_writers) {
          compactor(root, child_seed);
        }
        writer(root, round, slot, child_seed, ack[1], slot == tearing_slot);
      }
      children.push_back(pid);
      compactor_pid = slot == k_writers ? pid : compactor_pid;
      tearing_pid = slot == tearing_slot ? pid : tearing_pid;
    }
    ::close(ack[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + random() % 25000));
    // Not all at once: each at its own moment.
    std::shuffle(children.begin(), children.end(), random);
    for (const pid_t pid : children) {
      ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::microseconds(random() % 500));
    }
    for (const pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
        ++kills;
        compactor_kills += pid == compactor_pid ? 1 : 0;
      } else {
        // A tearing writer that got to tear before its kill (a slow,
        // sanitized one may not) left a torn line fsck must find.
        torn_writers += pid == tearing_pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "round " << round << ": a child failed by itself (exit " << WEXITSTATUS(status) << ")";
      }
    }
    char buffer[65536];
    for (ssize_t got; (got = ::read(ack[0], buffer, sizeof(buffer))) > 0;) {
      acknowledged_text.append(buffer, static_cast<size_t>(got));
    }
    ::close(ack[0]);
  }
  const std::set<std::string> acknowledged = split_lines(acknowledged_text);

  auto store = DirectoryStore::open_for_reading(root);
  ASSERT_TRUE(store);
  const Found before = read_everything(*store);
  size_t lost_from_logs = 0;
  size_t lost_from_indexes = 0;
  for (const auto& id : acknowledged) {
    lost_from_logs += before.in_logs.count(id) == 0 ? 1 : 0;
    lost_from_indexes += before.in_indexes.count(id) == 0 ? 1 : 0;
  }
  EXPECT_EQ(lost_from_logs, 0u) << "acknowledged events missing from the artifact logs";
  EXPECT_EQ(lost_from_indexes, 0u) << "acknowledged events missing from the build indexes";
  EXPECT_EQ(before.duplicates, 0u) << "events read back more than once";

  auto report = store->fsck({});
  ASSERT_TRUE(report) << report.error().message;
  size_t torn = 0;
  size_t leftovers = 0;
  size_t one_sided = 0;
  size_t empty = 0;
  for (const auto& finding : report->findings) {
    torn += finding.kind == FsckKind::torn_line ? 1 : 0;
    leftovers += finding.kind == FsckKind::leftover ? 1 : 0;
    one_sided += finding.kind == FsckKind::one_sided ? 1 : 0;
    empty += finding.kind == FsckKind::empty ? 1 : 0;
    EXPECT_NE(finding.kind, FsckKind::damage) << finding.file << ":" << finding.line << ": " << finding.problem;
  }
  EXPECT_GE(torn, torn_writers) << "fsck missed torn lines";

  auto repaired = store->fsck({.repair = true});
  ASSERT_TRUE(repaired) << repaired.error().message;
  EXPECT_EQ(repaired->repaired, repaired->findings.size()) << "fsck --repair left problems";
  auto again = store->fsck({});
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->findings.empty()) << again->findings.size() << " problems after fsck --repair, first "
                                       << (again->findings.empty() ? "" : again->findings.front().problem);
  const Found after = read_everything(*store);
  size_t lost_in_repair = 0;
  for (const auto& id : acknowledged) {
    lost_in_repair += after.in_logs.count(id) == 0 || after.in_indexes.count(id) == 0 ? 1 : 0;
  }
  EXPECT_EQ(lost_in_repair, 0u) << "fsck --repair lost acknowledged events";
  EXPECT_EQ(after.duplicates, 0u);

  EXPECT_GE(kills, 200u) << "too few kills landed on a running process";
  std::printf(
    "seed %llu: %zu kill -9 landed (%zu on compactions; %d rounds), %zu events acknowledged, %zu in artifact logs, "
    "%zu in build indexes; fsck found %zu torn lines (%zu writers tore on purpose), %zu leftover "
    "temporary files, %zu events on one side only (calls killed between their logs and their index) and %zu "
    "empty logs; repaired %zu, %zu events restored\n",
    static_cast<unsigned long long>(seed),
    kills,
    compactor_kills,
    k_rounds,
    acknowledged.size(),
    before.in_logs.size(),
    before.in_indexes.size(),
    torn,
    torn_writers,
    leftovers,
    one_sided,
    empty,
    repaired->repaired,
    repaired->events_restored);
}

} // namespace
} // namespace fingerprint::store
