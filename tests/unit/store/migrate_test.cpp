#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/migrate.hpp>

#include <gtest/gtest.h>

#include "null_store.hpp"
#include "temp_dir.hpp"
#include <algorithm>

namespace fingerprint::store {
namespace {

using test::TempDir;
using Order = std::vector<size_t>;

TEST(MergeOrders, RowsInNoChainGoEarliestTimeFirstTheLowerRowOnATie)
{
  EXPECT_EQ(merge_orders({"b", "a", "c", "a", "b"}, {}), (Order{1, 3, 0, 4, 2}));
}

TEST(MergeOrders, AChainKeepsItsOrderAgainstTheTimes)
{
  // The times alone would give 1, 3, 2, 0.
  EXPECT_EQ(merge_orders({"t4", "t1", "t3", "t2"}, {{0, 2}, {3, 1}}), (Order{3, 1, 0, 2}));
}

TEST(MergeOrders, ABuildIndexInterleavesTwoLogs)
{
  // Two logs (0, 1 and 2, 3) and an index that took their events in turns;
  // without the index, row order would put 1 before 2.
  EXPECT_EQ(merge_orders({"t", "t", "t", "t"}, {{0, 1}, {2, 3}, {0, 2, 1, 3}}), (Order{0, 2, 1, 3}));
}

TEST(MergeOrders, ARowInOneChainOnlyWaitsForItsOwnChainAlone)
{
  // Row 2 waits for row 0 only; row 1 (no chain) goes by its time.
  EXPECT_EQ(merge_orders({"t2", "t3", "t1"}, {{0, 2}}), (Order{0, 2, 1}));
  EXPECT_EQ(merge_orders({"t2", "t0", "t1"}, {{0, 2}}), (Order{1, 0, 2}));
}

TEST(MergeOrders, EmptyChainsChangeNothing)
{
  EXPECT_EQ(merge_orders({"a", "a", "a"}, {{}, {2, 0}, {}}), (Order{1, 2, 0}));
  EXPECT_EQ(merge_orders({}, {{}}), Order{});
}

TEST(MergeOrders, ChainsThatDisagreeStillPlaceEveryRowOnceTheEarliestWaitingFirst)
{
  // Rows free to go first; then, of the rows waiting on each other, the
  // earliest.
  EXPECT_EQ(merge_orders({"b", "a", "c"}, {{0, 1}, {1, 0}}), (Order{2, 1, 0}));
  EXPECT_EQ(merge_orders({"a", "b", "c"}, {{0, 1, 2}, {2, 1, 0}}), (Order{0, 1, 2}));
}

Event
produced(char digest, const std::string& build, const std::string& time)
{
  Event event;
  event.digest = "sha256:" + std::string(64, digest);
  event.path = "/build/" + std::string(1, digest);
  event.project = "p";
  event.target = "t";
  event.build = build;
  event.build_dir = "/build";
  event.host = "h";
  event.time = time;
  return event;
}

MigrateRow
row_of(const Event& event, const std::string& log = {})
{
  return {log.empty() ? event.digest : log, serialize(event), event};
}

TEST(RecordingOrder, ABuildIndexOrderWinsOverTheClockAcrossLogs)
{
  // The clock went back between two events of one build, in two logs.
  const Event later = produced('a', "1", "2026-11-30T09:00:02.000Z");
  const Event earlier = produced('b', "1", "2026-11-30T09:00:01.000Z");
  const std::vector<MigrateRow> rows = {row_of(later), row_of(earlier)};
  const std::vector<const MigrateRow*> pending = {&rows[1], &rows[0]};
  EXPECT_EQ(recording_order(pending, {{serialize(later), serialize(earlier)}}), (Order{1, 0}));
  EXPECT_EQ(recording_order(pending, {}), (Order{0, 1})) << "with no index, the earlier time first";
}

TEST(RecordingOrder, AnEventRecordedTwiceIsMatchedToItsIndexEntriesInTurn)
{
  // Log a holds x twice, log b holds y; the index: x, y, x. The second x
  // must wait for y, the first must not.
  const Event x = produced('a', "1", "2026-11-30T09:00:02.000Z");
  const Event y = produced('b', "1", "2026-11-30T09:00:01.000Z");
  const std::vector<MigrateRow> rows = {row_of(x), row_of(x), row_of(y)};
  const std::vector<const MigrateRow*> pending = {&rows[0], &rows[1], &rows[2]};
  EXPECT_EQ(recording_order(pending, {{serialize(x), serialize(y), serialize(x)}}), (Order{0, 2, 1}));
}

// A target that keeps what migrate() hands it.
class Recorder final : public test::NullStore
{
public:
  Recorder()
    : NullStore("recorder")
  {
  }
  mutable std::vector<std::vector<std::string>> logs; // each log's lines
  mutable size_t imports = 0;

  Expected<MigrateReport>
  import_from(const Migration& migration, const std::function<void(size_t, size_t)>& progress) const override
  {
    ++imports;
    for (const auto& log : migration.logs) {
      auto& lines = logs.emplace_back();
      for (const auto& row : log.rows) {
        lines.push_back(row.line);
      }
    }
    progress(1, 2);
    MigrateReport report;
    report.events_copied = 3;
    return report;
  }
};

TEST(Migrate, HandsEveryLogInItsOrderToTheTargetAndReportsProgressToTheEnd)
{
  TempDir dir;
  const Event a1 = produced('a', "1", "2026-11-30T09:00:01.000Z");
  const Event a2 = produced('a', "2", "2026-11-30T09:00:00.000Z");
  const Event b1 = produced('b', "1", "2026-11-30T09:00:02.000Z");
  {
    auto writer = DirectoryStore::open_for_writing(dir / "store");
    ASSERT_TRUE(writer) << writer.error().message;
    ASSERT_TRUE(writer->append({a1, b1}));
    ASSERT_TRUE(writer->append({a2}));
  }
  auto source = DirectoryStore::open_for_reading(dir / "store");
  ASSERT_TRUE(source) << source.error().message;
  Recorder target;
  std::vector<std::pair<size_t, size_t>> progress;
  auto report = migrate(*source, target, [&](size_t done, size_t total) { progress.emplace_back(done, total); });
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->logs, 2u);
  EXPECT_EQ(report->events_read, 3u);
  EXPECT_EQ(report->events_copied, 3u) << "the target's count";
  auto logs = target.logs;
  std::sort(logs.begin(), logs.end());
  EXPECT_EQ(logs, (std::vector<std::vector<std::string>>{{serialize(a1), serialize(a2)}, {serialize(b1)}}));
  // Two logs read (1, 2 of 4), the target's half way (3 of 4), the end.
  EXPECT_EQ(progress, (std::vector<std::pair<size_t, size_t>>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
}

TEST(Migrate, AnUnreadableLineStopsItBeforeTheTargetIsCalled)
{
  TempDir dir;
  const Event a1 = produced('a', "1", "2026-11-30T09:00:01.000Z");
  {
    auto writer = DirectoryStore::open_for_writing(dir / "store");
    ASSERT_TRUE(writer) << writer.error().message;
    ASSERT_TRUE(writer->append({a1}));
  }
  const std::string log = dir / ("store/" + parse_digest_key(a1.digest)->log_path());
  test::write_file(log, test::read_file(log) + "not an event\n");
  auto source = DirectoryStore::open_for_reading(dir / "store");
  ASSERT_TRUE(source) << source.error().message;
  Recorder target;
  auto report = migrate(*source, target, {});
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("1 unreadable line in"), std::string::npos) << report.error().message;
  EXPECT_EQ(target.imports, 0u);
}

} // namespace
} // namespace fingerprint::store
