#include <fingerprint/store/spool.hpp>

#include <gtest/gtest.h>

#include "null_store.hpp"
#include "temp_dir.hpp"
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <sys/file.h>
#include <unistd.h>

namespace fingerprint::store {
namespace {

using test::TempDir;

Event
produced(char digest, const std::string& build)
{
  Event e;
  e.event = EventKind::produced;
  e.digest = "sha256:" + std::string(64, digest);
  e.size = 3;
  e.path = "/b/" + std::string(1, digest);
  e.project = "p";
  e.target = "t";
  e.build = build;
  e.build_dir = "/b";
  e.host = "h";
  e.time = "2026-12-01T09:00:00.000Z";
  return e;
}

// A database as far as delivery sees it: it keeps call ids, and can be out
// of reach or refuse a call.
class FakeDatabase final : public test::NullStore
{
public:
  FakeDatabase()
    : NullStore("postgresql://u@db/x")
  {
  }
  mutable std::vector<std::vector<Event>> calls;
  mutable std::set<std::string> ids;
  mutable int reachable_calls = 1000; // after this many, out of reach
  std::string refuse_path;            // a call with an event at this path is refused

  // What the store was asked to do, in order: "manifest <digest>" (new or
  // not), "call <id>" (stored or not).
  mutable std::vector<std::string> log;
  mutable std::set<std::string> manifests;
  mutable int reachable_manifests = 1000;

  Expected<bool>
  put_manifest(const DigestKey& key, const std::string&, const Manifest&, Warnings*) const override
  {
    if (reachable_manifests-- <= 0) {
      Error error{"fake: cannot connect"};
      error.unavailable = true;
      return error;
    }
    log.push_back("manifest " + key.str());
    return manifests.insert(key.str()).second;
  }

  Expected<bool>
  append_call(const std::string& call, const std::vector<Event>& events, Warnings*) const override
  {
    log.push_back("call " + call);
    if (reachable_calls-- <= 0) {
      Error error{"fake: cannot connect"};
      error.unavailable = true;
      return error;
    }
    for (const auto& event : events) {
      if (event.path == refuse_path) {
        return Error{"fake: refused"};
      }
    }
    if (!ids.insert(call).second) {
      return false;
    }
    calls.push_back(events);
    return true;
  }
};

class SpoolTest : public ::testing::Test
{
protected:
  void
  SetUp() override
  {
    ::setenv("FINGERPRINT_SPOOL_DIR", (m_dir / "spool").c_str(), 1);
  }
  void
  TearDown() override
  {
    ::unsetenv("FINGERPRINT_SPOOL_DIR");
  }

  Spool
  spool() const
  {
    auto found = Spool::for_database("postgresql://u:secret@db:5432/x");
    EXPECT_TRUE(found) << found.error().message;
    return *found;
  }

  TempDir m_dir;
};

TEST_F(SpoolTest, AUrlAndItsMaskedLocationNameOneJournalThatHoldsNoPassword)
{
  const Spool raw = spool();
  auto masked = Spool::for_database("postgresql://u:***@db:5432/x");
  ASSERT_TRUE(masked);
  EXPECT_EQ(raw.directory(), masked->directory());
  EXPECT_EQ(raw.url(), "postgresql://u:***@db:5432/x");
  EXPECT_EQ(raw.directory().find("secret"), std::string::npos);
  EXPECT_NE(raw.directory(), Spool::for_database("postgresql://u@db:5433/x")->directory());
  EXPECT_EQ(mask_url_password("postgresql://db/x?password=s&user=u"), "postgresql://db/x?password=***&user=u");
}

TEST_F(SpoolTest, AnEmptySpoolDirectorySwitchesSpoolingOff)
{
  ::setenv("FINGERPRINT_SPOOL_DIR", "", 1);
  EXPECT_FALSE(Spool::for_database("postgresql://db/x"));
}

TEST_F(SpoolTest, NothingWaitsUntilACallIsAddedWholeAndNothingIsLeftAfterDelivery)
{
  const Spool journal = spool();
  EXPECT_FALSE(journal.has_waiting());
  ASSERT_TRUE(journal.add(new_call_id(), {produced('a', "1"), produced('b', "1")}, {}));
  EXPECT_TRUE(journal.has_waiting());
  const auto waiting = journal.contents();
  EXPECT_EQ(waiting.calls, 1u);
  EXPECT_EQ(waiting.events, 2u);
  EXPECT_TRUE(waiting.problems.empty());
  // No temporary file is left beside the journaled call.
  for (const auto& entry : std::filesystem::directory_iterator(journal.directory())) {
    EXPECT_FALSE(entry.path().filename().string().ends_with(".tmp")) << entry.path();
  }

  FakeDatabase database;
  const auto report = journal.deliver(database, true);
  EXPECT_FALSE(report.error);
  EXPECT_EQ(report.delivered, 1u);
  EXPECT_EQ(report.events, 2u);
  ASSERT_EQ(database.calls.size(), 1u);
  EXPECT_EQ(database.calls[0], (std::vector<Event>{produced('a', "1"), produced('b', "1")}));
  EXPECT_FALSE(journal.has_waiting());
}

TEST_F(SpoolTest, CallsAreDeliveredOldestFirst)
{
  const Spool journal = spool();
  for (char c : std::string("abcdef")) {
    ASSERT_TRUE(journal.add(new_call_id(), {produced(c, "1")}, {}));
  }
  FakeDatabase database;
  EXPECT_EQ(journal.deliver(database, true).delivered, 6u);
  ASSERT_EQ(database.calls.size(), 6u);
  std::string order;
  for (const auto& call : database.calls) {
    order += call.front().path.back();
  }
  EXPECT_EQ(order, "abcdef");
}

TEST_F(SpoolTest, AServerOutOfReachStopsDeliveryAndWhatIsLeftWaits)
{
  const Spool journal = spool();
  for (char c : std::string("abc")) {
    ASSERT_TRUE(journal.add(new_call_id(), {produced(c, "1")}, {}));
  }
  FakeDatabase database;
  database.reachable_calls = 1;
  const auto report = journal.deliver(database, true);
  ASSERT_TRUE(report.error);
  EXPECT_TRUE(report.error->unavailable);
  EXPECT_EQ(report.delivered, 1u);
  EXPECT_EQ(journal.contents().calls, 2u);
  database.reachable_calls = 1000;
  EXPECT_EQ(journal.deliver(database, true).delivered, 2u);
  EXPECT_EQ(database.calls.size(), 3u);
}

TEST_F(SpoolTest, ACallTheDatabaseHoldsAlreadyIsRemovedNotStoredAgain)
{
  const Spool journal = spool();
  const std::string call = new_call_id();
  ASSERT_TRUE(journal.add(call, {produced('a', "1")}, {}));
  FakeDatabase database;
  database.ids.insert(call); // committed by a deliverer killed before its unlink
  const auto report = journal.deliver(database, true);
  EXPECT_EQ(report.delivered, 0u);
  EXPECT_EQ(report.already, 1u);
  EXPECT_TRUE(database.calls.empty());
  EXPECT_FALSE(journal.has_waiting());
}

TEST_F(SpoolTest, ACallTheDatabaseRefusesIsSetAsideAndTheOthersGoOn)
{
  const Spool journal = spool();
  for (char c : std::string("abc")) {
    ASSERT_TRUE(journal.add(new_call_id(), {produced(c, "1")}, {}));
  }
  FakeDatabase database;
  database.refuse_path = "/b/b";
  const auto report = journal.deliver(database, true);
  EXPECT_FALSE(report.error);
  EXPECT_EQ(report.delivered, 2u);
  EXPECT_EQ(report.refused, 1u);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("refused"), std::string::npos) << report.problems[0];
  size_t kept = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(journal.directory() + "/refused")) {
    ++kept;
  }
  EXPECT_EQ(kept, 1u);
}

TEST_F(SpoolTest, ADamagedEntryIsSetAsideInDamagedAndReportedOnce)
{
  const Spool journal = spool();
  ASSERT_TRUE(journal.add(new_call_id(), {produced('a', "1")}, {}));
  const std::string name = "00000000000000000001-" + std::string(32, 'e') + ".jsonl";
  const std::string damaged = journal.directory() + "/calls/" + name;
  test::write_file(damaged, "{\"spool\": 1, \"call\": \"" + std::string(32, 'e') + "\", \"events\": 2}\nnot json\n");
  test::write_file(journal.directory() + "/calls/stray.txt", "not ours\n");
  const auto waiting = journal.contents();
  EXPECT_EQ(waiting.calls, 1u);
  ASSERT_EQ(waiting.problems.size(), 2u);
  EXPECT_NE(waiting.problems[0].find(damaged + ":2"), std::string::npos) << waiting.problems[0];

  FakeDatabase database;
  const auto report = journal.deliver(database, true);
  EXPECT_EQ(report.delivered, 1u);
  EXPECT_EQ(report.damaged, 2u);
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_NE(report.problems[0].find("damaged/" + name), std::string::npos) << report.problems[0];
  // Kept, never deleted, and out of the way: the next hook's stat() finds nothing to do.
  EXPECT_FALSE(std::filesystem::exists(damaged));
  EXPECT_TRUE(std::filesystem::exists(journal.directory() + "/damaged/" + name));
  EXPECT_TRUE(std::filesystem::exists(journal.directory() + "/damaged/stray.txt"));
  EXPECT_FALSE(journal.has_waiting());
  EXPECT_EQ(journal.contents().damaged, 2u);
  EXPECT_TRUE(journal.deliver(database, true).problems.empty());
}

TEST_F(SpoolTest, ALimitedDeliveryStopsAtItsLimitAndTheRestFollowsInOrder)
{
  const Spool journal = spool();
  for (char c : std::string("abcde")) {
    ASSERT_TRUE(journal.add(new_call_id(), {produced(c, "1")}, {}));
  }
  FakeDatabase database;
  const auto first = journal.deliver(database, false, {}, DeliveryLimit{.calls = 2});
  EXPECT_EQ(first.delivered, 2u);
  EXPECT_TRUE(first.cut_short);
  EXPECT_EQ(journal.contents().calls, 3u);
  // A time limit still delivers one call per delivery.
  const auto second = journal.deliver(database, false, {}, DeliveryLimit{.ns = 1});
  EXPECT_EQ(second.delivered, 1u);
  EXPECT_TRUE(second.cut_short);
  const auto rest = journal.deliver(database, false);
  EXPECT_EQ(rest.delivered, 2u);
  EXPECT_FALSE(rest.cut_short);
  EXPECT_FALSE(journal.has_waiting());
  std::string order;
  for (const auto& call : database.calls) {
    order += call.front().path.back();
  }
  EXPECT_EQ(order, "abcde");
}

TEST_F(SpoolTest, ADeliveryThatFindsTheJournalLockedSaysSo)
{
  const Spool journal = spool();
  ASSERT_TRUE(journal.add(new_call_id(), {produced('a', "1")}, {}));
  const int held = ::open((journal.directory() + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  FakeDatabase database;
  const auto report = journal.deliver(database, false);
  EXPECT_TRUE(report.locked_out);
  EXPECT_EQ(report.delivered, 0u);
  ::close(held);
  EXPECT_EQ(journal.deliver(database, false).delivered, 1u);
}

// A call journaled when the clock read far ahead (the clock is then stepped
// back, as NTP does after an outage of the time server): the next call
// still sorts after it, and is delivered after it.
TEST_F(SpoolTest, ACallJournaledAfterTheClockSteppedBackIsDeliveredAfterTheOnesBefore)
{
  const Spool journal = spool();
  const std::string early = new_call_id();
  auto first = journal.add(early, {produced('a', "1")}, {});
  ASSERT_TRUE(first);
  const std::string ahead = "09000000000000000000";
  const std::string moved = journal.directory() + "/calls/" + ahead + "-" + early + ".jsonl";
  std::filesystem::rename(first->file, moved);
  test::write_file(journal.directory() + "/sequence", ahead + "\n");
  auto second = journal.add(new_call_id(), {produced('b', "1")}, {});
  ASSERT_TRUE(second);
  EXPECT_GT(std::filesystem::path(second->file).filename().string(), ahead) << second->file;
  FakeDatabase database;
  EXPECT_EQ(journal.deliver(database, true).delivered, 2u);
  ASSERT_EQ(database.calls.size(), 2u);
  EXPECT_EQ(database.calls[0].front().path, "/b/a");
  EXPECT_EQ(database.calls[1].front().path, "/b/b");
}

TEST_F(SpoolTest, RefusedCallsArePutBackInTheirPlaceToBeDeliveredAgain)
{
  const Spool journal = spool();
  for (char c : std::string("abc")) {
    ASSERT_TRUE(journal.add(new_call_id(), {produced(c, "1")}, {}));
  }
  FakeDatabase database;
  database.refuse_path = "/b/a";
  EXPECT_EQ(journal.deliver(database, true).refused, 1u);
  EXPECT_EQ(journal.contents().refused, 1u);
  ASSERT_TRUE(journal.add(new_call_id(), {produced('d', "1")}, {}));
  database.refuse_path.clear();
  auto moved = journal.retry_refused();
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ(*moved, 1u);
  EXPECT_EQ(journal.contents().refused, 0u);
  EXPECT_EQ(journal.deliver(database, true).delivered, 2u);
  std::string order;
  for (const auto& call : database.calls) {
    order += call.front().path.back();
  }
  EXPECT_EQ(order, "bcad");
}

TEST_F(SpoolTest, WhatNoDatabaseCouldStoreIsRefusedBeforeItIsJournaled)
{
  const Spool journal = spool();
  Event bad = produced('a', "1");
  bad.project = std::string("p\0q", 3);
  EXPECT_FALSE(journal.add(new_call_id(), {bad}, {}));
  EXPECT_FALSE(journal.has_waiting());
}

TEST_F(SpoolTest, OnlyTheFirstCallOfABuildIsToldItIsTheFirst)
{
  const Spool journal = spool();
  auto first = journal.add(new_call_id(), {produced('a', "7")}, {});
  auto second = journal.add(new_call_id(), {produced('b', "7")}, {});
  auto other = journal.add(new_call_id(), {produced('c', "8")}, {});
  ASSERT_TRUE(first && second && other);
  EXPECT_TRUE(first->first_of_build);
  EXPECT_FALSE(second->first_of_build);
  EXPECT_TRUE(other->first_of_build);
}

TEST_F(SpoolTest, ACallJournaledBehindOthersDoesNotSilenceItsBuildsOutageWarning)
{
  const Spool journal = spool();
  auto behind = journal.add(new_call_id(), {produced('a', "9")}, {}, false);
  auto outage = journal.add(new_call_id(), {produced('b', "9")}, {});
  ASSERT_TRUE(behind && outage);
  EXPECT_TRUE(outage->first_of_build);
}

// A call's input manifest, as the recorder makes it, and its name.
std::pair<DigestKey, std::string>
manifest_of(char input)
{
  Manifest manifest;
  manifest.entries.push_back({Role::link, std::string(64, input), 7, "/usr/lib/lib" + std::string(1, input) + ".a"});
  manifest.entries.push_back({Role::compile, std::string(64, 'f'), 9, "/usr/include/stdio.h"});
  normalize(manifest);
  std::string encoded = encode(manifest);
  auto key = manifest_key(manifest.algorithm, encoded);
  EXPECT_TRUE(key) << key.error().message;
  return {*key, std::move(encoded)};
}

Event
produced_from(char digest, const DigestKey& manifest)
{
  Event event = produced(digest, "1");
  event.inputs = manifest.str();
  return event;
}

TEST_F(SpoolTest, AJournaledCallsManifestIsPutBeforeItsEventsAndStoredOnceThoughADeliveryStopsBetween)
{
  const Spool journal = spool();
  const auto [key, encoded] = manifest_of('1');
  const std::string first = new_call_id(), second = new_call_id();
  ASSERT_TRUE(journal.add(first, {produced_from('a', key)}, {{key, encoded}}));
  ASSERT_TRUE(journal.add(second, {produced_from('b', key)}, {{key, encoded}}));
  const auto waiting = journal.contents();
  EXPECT_EQ(waiting.calls, 2u);
  EXPECT_EQ(waiting.events, 2u);
  EXPECT_EQ(waiting.manifests, 2u);
  EXPECT_TRUE(waiting.problems.empty()) << waiting.problems.front();

  // The server goes away after the first call's manifest is in: its events
  // wait, with the manifest, for the next delivery.
  FakeDatabase database;
  database.reachable_calls = 0;
  auto stopped = journal.deliver(database, true);
  ASSERT_TRUE(stopped.error);
  EXPECT_TRUE(stopped.error->unavailable);
  EXPECT_EQ(stopped.delivered, 0u);
  EXPECT_EQ(journal.contents().calls, 2u);

  database.reachable_calls = 1000;
  auto report = journal.deliver(database, true);
  EXPECT_FALSE(report.error) << report.error->message;
  EXPECT_EQ(report.delivered, 2u);
  EXPECT_EQ(report.events, 2u);
  EXPECT_EQ(report.manifests, 0u) << "the store had it from the delivery that stopped";
  EXPECT_EQ(database.log,
            (std::vector<std::string>{"manifest " + key.str(),
                                      "call " + first,
                                      "manifest " + key.str(),
                                      "call " + first,
                                      "manifest " + key.str(),
                                      "call " + second}));
  EXPECT_EQ(database.manifests, (std::set<std::string>{key.str()}));
  ASSERT_EQ(database.calls.size(), 2u);
  EXPECT_EQ(database.calls[0], (std::vector<Event>{produced_from('a', key)}));
  EXPECT_FALSE(journal.has_waiting());
}

TEST_F(SpoolTest, AManifestThatIsNotWhatItsNameSaysIsRefusedBeforeItIsJournaled)
{
  const Spool journal = spool();
  const auto [key, encoded] = manifest_of('1');
  const auto [other, other_bytes] = manifest_of('2');
  EXPECT_FALSE(journal.add(new_call_id(), {produced_from('a', key)}, {{key, other_bytes}}));
  EXPECT_FALSE(journal.add(new_call_id(), {produced_from('a', key)}, {{key, "not a manifest"}}));
  EXPECT_FALSE(journal.has_waiting());
}

TEST_F(SpoolTest, AnEntryWhoseManifestWasDamagedIsSetAsideWithItsEvents)
{
  const Spool journal = spool();
  const auto [key, encoded] = manifest_of('1');
  auto added = journal.add(new_call_id(), {produced_from('a', key)}, {{key, encoded}});
  ASSERT_TRUE(added) << added.error().message;
  // One hex digit of the manifest's bytes changed: it no longer hashes to its name.
  std::string text = test::read_file(added->file);
  const size_t bytes = text.find("\"bytes\":\"");
  ASSERT_NE(bytes, std::string::npos) << text;
  char& digit = text[bytes + 9 + 80]; // in the first entry's digest
  digit = digit == '0' ? '1' : '0';
  test::write_file(added->file, text);

  FakeDatabase database;
  const auto report = journal.deliver(database, true);
  EXPECT_EQ(report.delivered, 0u);
  EXPECT_EQ(report.damaged, 1u);
  EXPECT_TRUE(database.log.empty()) << database.log.front();
}

TEST(SpoolIds, CallIdsAre32HexDigitsAndDiffer)
{
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto id = new_call_id();
    ASSERT_EQ(id.size(), 32u);
    ASSERT_TRUE(seen.insert(id).second);
  }
}

} // namespace
} // namespace fingerprint::store
