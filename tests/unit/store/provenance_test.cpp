// Builds' provenance in the directory store (store/provenance.hpp): written
// once, checked on the way in and out, seen by fsck, removed by gc with the
// build's last event, and carried by the journal of a database out of reach.

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/gc.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/store/spool.hpp>

#include <gtest/gtest.h>

#include "null_store.hpp"
#include "temp_dir.hpp"
#include <cstdlib>
#include <filesystem>

namespace fingerprint::store {
namespace {

using test::TempDir;

std::string
document(const std::string& project, const std::string& build, const std::string& commit = "1234abcd")
{
  return R"({"provenance":1,"project":")" + project + R"(","build":")" + build + R"(","source":{"vcs":"git","commit":")"
         + commit
         + R"(","branch":"main","dirty":false,"remote":null},"compilers":{"CXX":{"id":"GNU","version":"12.2.0"}},)"
         + R"("build_type":"Release"})" + "\n";
}

Event
produced(const std::string& build)
{
  Event e;
  e.event = EventKind::produced;
  e.digest = "sha256:" + std::string(64, 'a');
  e.size = 3;
  e.path = "/b/app";
  e.project = "app";
  e.target = "app";
  e.build = build;
  e.build_dir = "/b";
  e.host = "h";
  e.time = "2026-12-01T09:00:00.000Z";
  return e;
}

DirectoryStore
writable(const TempDir& dir)
{
  auto store = DirectoryStore::open_for_writing(dir / "store");
  EXPECT_TRUE(store) << store.error().message;
  return std::move(*store);
}

TEST(Provenance, IsWrittenOnceAndReadBackAsWritten)
{
  TempDir dir;
  const auto store = writable(dir);
  const BuildRef build{"app", "1-0badcafe"};
  auto first = store.put_provenance(build, document("app", "1-0badcafe"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  auto second = store.put_provenance(build, document("app", "1-0badcafe", "ffff0000"));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(*second) << "a build's provenance is written once";
  auto read = store.read_provenance(build);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(*read);
  EXPECT_EQ(**read, document("app", "1-0badcafe"));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / ("store/" + layout::build_provenance(build))));
  auto none = store.read_provenance({"app", "2-0badcafe"});
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  // Not a build of its own: builds are what their indexes list.
  auto builds = store.list_builds();
  ASSERT_TRUE(builds);
  EXPECT_TRUE(builds->empty());
}

TEST(Provenance, ADocumentOfAnotherBuildOrNoDocumentIsRefused)
{
  TempDir dir;
  const auto store = writable(dir);
  const BuildRef build{"app", "1-0badcafe"};
  auto other = store.put_provenance(build, document("app", "2-0badcafe"));
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("not of app 1-0badcafe"), std::string::npos) << other.error().message;
  EXPECT_FALSE(store.put_provenance(build, "[1, 2]\n"));
  EXPECT_FALSE(store.put_provenance(build, R"({"provenance": 99, "project": "app", "build": "1-0badcafe"})"));
  EXPECT_FALSE(std::filesystem::exists(dir / ("store/" + layout::build_provenance(build))));
}

TEST(Provenance, FsckSetsADamagedOneAsideAndASoundOneIsNoFinding)
{
  TempDir dir;
  const auto store = writable(dir);
  ASSERT_TRUE(store.append({produced("1")}));
  ASSERT_TRUE(store.append({produced("2")}));
  ASSERT_TRUE(store.put_provenance({"app", "1"}, document("app", "1")));
  ASSERT_TRUE(store.put_provenance({"app", "2"}, document("app", "2")));
  auto clean = store.fsck({});
  ASSERT_TRUE(clean);
  EXPECT_TRUE(clean->findings.empty()) << clean->findings.front().file << ": " << clean->findings.front().problem;

  const std::string damaged = dir / ("store/" + layout::build_provenance({"app", "2"}));
  test::write_file(damaged, "{\"provenance\": 1, \"proj");
  auto found = store.fsck({});
  ASSERT_TRUE(found);
  ASSERT_EQ(found->findings.size(), 1U);
  EXPECT_EQ(found->findings.front().file, layout::build_provenance({"app", "2"}));
  EXPECT_EQ(found->findings.front().kind, FsckKind::damage);
  EXPECT_FALSE(store.read_provenance({"app", "2"})) << "reading it says it is damaged";

  auto repaired = store.fsck({.repair = true});
  ASSERT_TRUE(repaired);
  EXPECT_EQ(repaired->repaired, 1U);
  EXPECT_FALSE(std::filesystem::exists(damaged));
  EXPECT_EQ(test::read_file(dir / ("store/" + repaired->quarantine + "/" + layout::build_provenance({"app", "2"}))),
            "{\"provenance\": 1, \"proj");
  auto after = store.fsck({});
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->findings.empty());
  auto kept = store.read_provenance({"app", "1"});
  ASSERT_TRUE(kept && *kept);
}

TEST(Provenance, GcRemovesItWithTheBuildsLastEventOnly)
{
  TempDir dir;
  const auto store = writable(dir);
  Event other_target = produced("1");
  other_target.target = "tool";
  other_target.digest = "sha256:" + std::string(64, 'b');
  other_target.path = "/b/tool";
  ASSERT_TRUE(store.append({produced("1"), other_target}));
  ASSERT_TRUE(store.put_provenance({"app", "1"}, document("app", "1")));

  GcPlan plan;
  plan.dropped = {{"app", "app", "1"}};
  const GcResult partly = apply_gc(store, plan, false);
  EXPECT_TRUE(partly.failures.empty());
  EXPECT_EQ(partly.provenance_removed, 0U) << "the build keeps an event";
  ASSERT_TRUE(store.read_provenance({"app", "1"}).value());

  plan.dropped = {{"app", "tool", "1"}};
  const GcResult dry = apply_gc(store, plan, true);
  EXPECT_EQ(dry.provenance_removed, 1U);
  ASSERT_TRUE(store.read_provenance({"app", "1"}).value()) << "a dry run removes nothing";
  const GcResult all = apply_gc(store, plan, false);
  EXPECT_TRUE(all.failures.empty());
  EXPECT_EQ(all.provenance_removed, 1U);
  EXPECT_FALSE(store.read_provenance({"app", "1"}).value());
  EXPECT_FALSE(std::filesystem::exists(dir / ("store/" + layout::build_provenance({"app", "1"}))));
}

// A database that keeps provenance and calls, in the order it was asked.
class ProvenanceDatabase final : public test::NullStore
{
public:
  ProvenanceDatabase()
    : NullStore("postgresql://u@db/x")
  {
  }
  mutable std::vector<std::string> log;
  mutable std::map<std::string, std::string> documents;

  Expected<bool>
  put_provenance(const BuildRef& build, const std::string& text) const override
  {
    log.push_back("provenance " + build.build);
    return documents.try_emplace(build.project + "/" + build.build, text).second;
  }
  Expected<bool>
  append_call(const std::string&, const std::vector<Event>& events, Warnings*) const override
  {
    log.push_back("call " + events.front().build);
    return true;
  }
};

TEST(Provenance, TravelsInTheJournalWithItsCallAndIsPutFirst)
{
  TempDir dir;
  ::setenv("FINGERPRINT_SPOOL_DIR", (dir / "spool").c_str(), 1);
  auto journal = Spool::for_database("postgresql://u@db/x");
  ASSERT_TRUE(journal) << journal.error().message;
  ASSERT_TRUE(
    journal->add(new_call_id(), {produced("1")}, {}, true, SpooledProvenance{{"app", "1"}, document("app", "1")}));
  ASSERT_TRUE(journal->add(new_call_id(), {produced("1")}, {}));
  // What the store would refuse is refused now: the journal is the only copy.
  EXPECT_FALSE(journal->add(new_call_id(), {produced("1")}, {}, true, SpooledProvenance{{"app", "1"}, "{}"}));

  ProvenanceDatabase database;
  const auto report = journal->deliver(database, true);
  ::unsetenv("FINGERPRINT_SPOOL_DIR");
  EXPECT_FALSE(report.error);
  EXPECT_EQ(report.delivered, 2U);
  EXPECT_EQ(database.log, (std::vector<std::string>{"provenance 1", "call 1", "call 1"}));
  EXPECT_EQ(database.documents["app/1"], document("app", "1"));
}

TEST(Provenance, SummaryNamesCommitDirtinessCompilersAndBuildType)
{
  auto parsed = parse_provenance(document("app", "1", "0123456789abcdef0123"), {"app", "1"}, "x");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(provenance_summary(*parsed), "0123456789ab main, GNU 12.2.0 (CXX), Release");
  (*parsed)["source"]["dirty"] = true;
  (*parsed)["source"]["branch"] = nullptr;
  EXPECT_EQ(provenance_summary(*parsed), "0123456789ab+dirty, GNU 12.2.0 (CXX), Release");
}

} // namespace
} // namespace fingerprint::store
