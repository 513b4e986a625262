// One suite for every store backend: the directory store and the PostgreSQL
// store must answer the same calls with the same values. Each test writes
// its expected values out in full; neither backend is the reference for the
// other, so a bug shared by both still fails.

#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/migrate.hpp>
#include <fingerprint/store/store.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <libpq-fe.h>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fingerprint::store {

// Failures show an event as the line the directory store would write.
void
PrintTo(const Event& event, std::ostream* out)
{
  *out << serialize(event);
}

namespace {

using Names = std::vector<std::pair<std::string, std::string>>; // (project, build)

DigestKey
key_of(char c)
{
  return DigestKey{digest::Algorithm::sha256, std::string(64, c)};
}

DigestKey
numbered_key(unsigned number)
{
  char hex[65];
  std::snprintf(hex, sizeof(hex), "%064x", number);
  return DigestKey{digest::Algorithm::sha256, hex};
}

Event
event_of(EventKind kind, const DigestKey& artifact, const std::string& project, const std::string& build)
{
  Event event;
  event.event = kind;
  event.digest = artifact.str();
  event.size = 4096;
  event.path = "/build/" + project + "/" + artifact.hex.substr(0, 8);
  event.project = project;
  event.version = "1.0";
  event.target = project + "_target";
  event.build = build;
  event.build_dir = "/build/" + project;
  event.host = "host1";
  event.time = "2026-11-30T09:00:00.000Z";
  return event;
}

Event
produced(const DigestKey& artifact, const std::string& project, const std::string& build)
{
  return event_of(EventKind::produced, artifact, project, build);
}

Event
consumed(const DigestKey& artifact, const DigestKey& product, const std::string& project, const std::string& build)
{
  Event event = event_of(EventKind::consumed, artifact, project, build);
  event.product = product.str();
  return event;
}

// `copy` installed from the build-tree file `from`.
Event
installed(const DigestKey& copy, const DigestKey& from, const std::string& project, const std::string& build)
{
  Event event = event_of(EventKind::installed, copy, project, build);
  event.path = "/usr/lib/" + copy.hex.substr(0, 8);
  event.from = from.str();
  return event;
}

Names
names_of(const std::vector<BuildRef>& builds)
{
  Names names;
  for (const auto& build : builds) {
    names.emplace_back(build.project, build.build);
  }
  return names;
}

std::vector<std::pair<Event, int>>
hits_of(const std::vector<ConsumerHit>& hits)
{
  std::vector<std::pair<Event, int>> result;
  for (const auto& hit : hits) {
    result.emplace_back(hit.event, hit.depth);
  }
  return result;
}

std::vector<std::string>
sorted_lines(const std::vector<Event>& events)
{
  std::vector<std::string> lines;
  for (const auto& event : events) {
    lines.push_back(serialize(event));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// PostgreSQL through libpq, for what the store's interface does not show:
// creating and dropping databases, and looking at the schema.

using PgConnection = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using PgResult = std::unique_ptr<PGresult, decltype(&PQclear)>;

// Runs one statement; the first column of its first row, if any.
Expected<std::optional<std::string>>
pg_query(const std::string& url, const std::string& sql)
{
  PgConnection connection(PQconnectdb(url.c_str()), &PQfinish);
  if (PQstatus(connection.get()) != CONNECTION_OK) {
    return make_error(url, PQerrorMessage(connection.get()));
  }
  PgResult result(PQexec(connection.get(), sql.c_str()), &PQclear);
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return make_error(sql, PQerrorMessage(connection.get()));
  }
  if (PQntuples(result.get()) == 0 || PQgetisnull(result.get(), 0, 0)) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(PQgetvalue(result.get(), 0, 0));
}

// The maintenance database of the throwaway server that the `postgresql`
// CTest fixture started (tests/pg/server.sh).
Expected<std::string>
maintenance_url()
{
  const char* file = std::getenv("FINGERPRINT_TEST_PG_URL_FILE");
  if (file == nullptr || *file == '\0') {
    return Error{"FINGERPRINT_TEST_PG_URL_FILE is not set: run these tests through ctest, whose postgresql fixture "
                 "starts a throwaway server, or point it at a file holding postgresql://... of such a server"};
  }
  std::ifstream in(file);
  std::string url;
  std::getline(in, url);
  while (!url.empty() && std::isspace(static_cast<unsigned char>(url.back()))) {
    url.pop_back();
  }
  if (url.empty()) {
    return make_error(file, "FINGERPRINT_TEST_PG_URL_FILE names a file that is missing, unreadable or empty");
  }
  if (!url.starts_with("postgresql://") && !url.starts_with("postgres://")) {
    return make_error(file, "does not hold a postgresql:// URL: " + url);
  }
  return url;
}

// `url` pointing at database `name` instead, its parameters kept.
std::string
with_database(const std::string& url, const std::string& name)
{
  const size_t authority = url.find("://") + 3;
  const size_t authority_end = std::min(url.find_first_of("/?", authority), url.size());
  const size_t query = url.find('?', authority);
  return url.substr(0, authority_end) + "/" + name + (query == std::string::npos ? "" : url.substr(query));
}

// Gives each test an empty store of one backend: a fresh directory, or a
// fresh database (dropped when the test passed, kept and named when it
// failed, as TempDir keeps its directory).
class FreshStore : public ::testing::Test
{
protected:
  void
  prepare(const std::string& backend)
  {
    enable_postgresql(); // open_store() opens directories only until this
    m_backend = backend;
    if (backend == "directory") {
      m_dir.emplace();
      m_location = *m_dir / "store";
      return;
    }
    ASSERT_EQ(backend, "postgresql");
    auto maintenance = maintenance_url();
    ASSERT_TRUE(maintenance) << maintenance.error().message;
    m_maintenance_url = *maintenance;
    static int counter = 0;
    const std::string name = "fp_conf_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    // A fleet's database usually sorts text by a language's rules (initdb
    // takes the locale of its environment, e.g. en_US.UTF-8); the directory
    // store sorts bytes. Give the tests such a database, so an answer that
    // leans on the database's collation shows.
    auto created = pg_query(m_maintenance_url,
                            "CREATE DATABASE " + name
                              + " TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'");
    ASSERT_TRUE(created) << created.error().message;
    m_database = name;
    m_location = with_database(m_maintenance_url, name);
  }

  void
  TearDown() override
  {
    if (m_database.empty()) {
      return;
    }
    if (HasFailure()) {
      std::fprintf(stderr, "kept the test database %s\n", m_location.c_str());
      return;
    }
    auto dropped = pg_query(m_maintenance_url, "DROP DATABASE IF EXISTS " + m_database + " WITH (FORCE)");
    EXPECT_TRUE(dropped) << dropped.error().message;
  }

  bool
  is_postgresql() const
  {
    return m_backend == "postgresql";
  }

  std::unique_ptr<Store>
  open(Access access) const
  {
    auto store = open_store(m_location, access);
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  // One statement on the test's database; its first value.
  std::optional<std::string>
  sql(const std::string& statement) const
  {
    auto result = pg_query(m_location, statement);
    EXPECT_TRUE(result) << result.error().message;
    return result ? *result : std::nullopt;
  }

  std::string m_backend;
  std::string m_location;
  std::optional<test::TempDir> m_dir;
  std::string m_maintenance_url;
  std::string m_database;
};

class StoreConformance
  : public FreshStore
  , public ::testing::WithParamInterface<std::string>
{
protected:
  void
  SetUp() override
  {
    prepare(GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Backend,
                         StoreConformance,
                         ::testing::Values("directory", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST_P(StoreConformance, AppendedEventsReadBackInAppendOrderFieldForField)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->location(), m_location);
  if (is_postgresql()) {
    EXPECT_NE(dynamic_cast<PostgresStore*>(store.get()), nullptr) << "open_store did not dispatch on the URL";
  } else {
    EXPECT_NE(dynamic_cast<DirectoryStore*>(store.get()), nullptr) << "open_store did not dispatch on the path";
  }

  const auto a = key_of('a');
  const auto b = key_of('b');
  const auto c = key_of('c');
  // Times and builds run against append order: a backend that sorts by
  // either reads them back in the wrong order.
  auto up = produced(a, "up", "5");
  up.time = "2026-11-30T12:00:00.000Z";
  auto app9 = consumed(a, b, "app", "9");
  app9.time = "2026-11-30T11:00:00.000Z";
  app9.path = "/build/app/ünï \"quoted\" \\ dir/liba.so"; // escapes and UTF-8 survive the round trip
  auto app10 = consumed(a, c, "app", "10");
  app10.time = "2026-11-30T10:00:00.000Z";
  app10.size = 5368709120u; // 5 GiB: more than 32 bits
  const auto made_b = produced(b, "app", "9");
  const auto made_c = produced(c, "app", "10");
  const auto zeta = consumed(a, c, "Zeta", "1");
  const auto umlaut = consumed(a, c, "ärger", "1");
  ASSERT_TRUE(store->append({up}));
  ASSERT_TRUE(store->append({app9, made_b}));
  ASSERT_TRUE(store->append({app10, made_c}));
  ASSERT_TRUE(store->append({zeta}));
  ASSERT_TRUE(store->append({umlaut}));

  auto log = store->read_log(a);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->events, (std::vector<Event>{up, app9, app10, zeta, umlaut}));
  EXPECT_TRUE(log->problems.empty());
  EXPECT_FALSE(log->torn_tail);

  auto never = store->read_log(key_of('d'));
  ASSERT_TRUE(never) << never.error().message;
  EXPECT_TRUE(never->events.empty());
  EXPECT_TRUE(never->problems.empty());

  // Bytewise, as the directory store sorts: "10" before "9", "Zeta"
  // before "app", and "ärger" (0xC3...) last.
  auto builds = store->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_EQ(names_of(*builds), (Names{{"Zeta", "1"}, {"app", "10"}, {"app", "9"}, {"up", "5"}, {"ärger", "1"}}));

  auto app_9 = store->read_build({"app", "9"});
  ASSERT_TRUE(app_9) << app_9.error().message;
  EXPECT_EQ(app_9->events, (std::vector<Event>{app9, made_b}));
  auto app_10 = store->read_build({"app", "10"});
  ASSERT_TRUE(app_10) << app_10.error().message;
  EXPECT_EQ(app_10->events, (std::vector<Event>{app10, made_c}));
  auto unknown = store->read_build({"app", "11"});
  ASSERT_TRUE(unknown) << unknown.error().message;
  EXPECT_TRUE(unknown->events.empty());

  // A second handle, read-only, sees the same.
  const auto reader = open(Access::read);
  ASSERT_TRUE(reader);
  auto again = reader->read_log(a);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->events, (std::vector<Event>{up, app9, app10, zeta, umlaut}));
}

// read_logs() answers for every key asked, once per key, each log in its
// own append order however the appends interleaved them: a backend that
// merges, sorts by time, drops an unknown key or reads a repeated key twice
// fails.
TEST_P(StoreConformance, ManyLogsReadAtOnceAreEachWhatReadingItAloneReads)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto a = key_of('a');
  const auto b = key_of('b');
  const auto c = key_of('c');
  const auto d = key_of('d'); // never written
  auto made_a = produced(a, "up", "1");
  made_a.time = "2026-11-30T12:00:00.000Z";
  const auto a_into_b = consumed(a, b, "app", "2");
  const auto made_b = produced(b, "app", "2");
  const auto a_into_c = consumed(a, c, "app", "3");
  const auto made_c = produced(c, "app", "3");
  ASSERT_TRUE(store->append({made_a}));
  ASSERT_TRUE(store->append({a_into_b, made_b}));
  ASSERT_TRUE(store->append({a_into_c, made_c}));

  auto logs = store->read_logs({c, d, a, c, b});
  ASSERT_TRUE(logs) << logs.error().message;
  std::map<std::string, std::vector<Event>> events;
  for (const auto& [key, log] : *logs) {
    events[key] = log.events;
    EXPECT_TRUE(log.problems.empty()) << key;
    auto alone = store->read_log(*parse_digest_key(key));
    ASSERT_TRUE(alone) << alone.error().message;
    EXPECT_EQ(log.events, alone->events) << key;
  }
  EXPECT_EQ(events,
            (std::map<std::string, std::vector<Event>>{
              {a.str(), {made_a, a_into_b, a_into_c}}, {b.str(), {made_b}}, {c.str(), {made_c}}, {d.str(), {}}}));
  auto none = store->read_logs({});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
}

TEST_P(StoreConformance, TheRawLogIsOneSerializedLinePerEventInOrder)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto a = key_of('a');
  auto first = produced(a, "up", "2");
  first.path = "/build/up/tab\there/ünï.so";
  const auto second = consumed(a, key_of('b'), "app", "1");
  const auto third = consumed(a, key_of('c'), "app", "0");
  ASSERT_TRUE(store->append({first, second}));
  ASSERT_TRUE(store->append({third}));

  auto raw = store->read_raw_log(a);
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_EQ(*raw, serialize(first) + "\n" + serialize(second) + "\n" + serialize(third) + "\n");
  auto absent = store->read_raw_log(key_of('d'));
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_EQ(*absent, "");
}

// A name is bytes: one that is not UTF-8 (a Latin-1 build tree, a stray
// 0xFF) reads back exactly from every call, while the stored line, which is
// UTF-8 JSON, spells it with U+FFFD in "path" and exactly in "path_bytes".
TEST_P(StoreConformance, PathsThatAreNotUtf8ReadBackByteForByte)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto a = key_of('a'), b = key_of('b'), e = key_of('e');
  auto made = produced(a, "lib", "1");
  made.path = "/build/tr\xe9"
              "e/lib\xff.a";
  made.build_dir = "/build/tr\xe9"
                   "e";
  auto used = consumed(a, b, "app", "2");
  used.path = made.path;
  used.build_dir = "/build/app\xfe";
  auto install = installed(e, a, "lib", "1-install");
  install.path = "/usr/lib/lib\xff.a";
  install.build_dir = made.build_dir;
  ASSERT_TRUE(store->append({made}));
  ASSERT_TRUE(store->append({used}));
  ASSERT_TRUE(store->append({install}));
  ASSERT_TRUE(store->append_link(a, install));

  auto log = store->read_log(a);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->events, (std::vector<Event>{made, used, install}));
  EXPECT_TRUE(log->problems.empty()) << log->problems.front().message;
  auto lib_1 = store->read_build({"lib", "1"});
  ASSERT_TRUE(lib_1) << lib_1.error().message;
  EXPECT_EQ(lib_1->events, (std::vector<Event>{made}));
  auto app_2 = store->read_build({"app", "2"});
  ASSERT_TRUE(app_2) << app_2.error().message;
  EXPECT_EQ(app_2->events, (std::vector<Event>{used}));
  std::vector<LogProblem> problems;
  auto hits = store->find_consumers(a, false, problems);
  ASSERT_TRUE(hits) << hits.error().message;
  EXPECT_EQ(hits_of(*hits), (std::vector<std::pair<Event, int>>{{used, 1}}));

  auto raw = store->read_raw_log(a);
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_EQ(*raw, serialize(made) + "\n" + serialize(used) + "\n" + serialize(install) + "\n");
  EXPECT_NE(raw->find(R"("path":"/build/tr)"
                      "\xef\xbf\xbd"
                      R"(e/lib)"
                      "\xef\xbf\xbd"
                      R"(.a","path_bytes":"/build/tr%E9e/lib%FF.a",)"),
            std::string::npos)
    << *raw;
  EXPECT_NE(raw->find(R"("build_dir":"/build/app)"
                      "\xef\xbf\xbd"
                      R"(","build_dir_bytes":"/build/app%FE",)"),
            std::string::npos)
    << *raw;

  FsckOptions options;
  auto report = store->fsck(options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->events, 3u + 1u + 1u + 1u + 1u) << "logs a (3) and e (1); indexes lib/1, app/2, lib/1-install";
  EXPECT_TRUE(report->findings.empty()) << report->findings.front().file << ": " << report->findings.front().problem;
}

TEST_P(StoreConformance, AnInstalledCopyIsLinkedIntoTheOriginsLogButNotIntoABuildIndex)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto origin = key_of('a');
  const auto copy = key_of('e');
  const auto made = produced(origin, "lib", "1");
  const auto install = installed(copy, origin, "lib", "1-install");
  ASSERT_TRUE(store->append({made}));
  ASSERT_TRUE(store->append({install}));
  ASSERT_TRUE(store->append_link(origin, install));

  auto origin_log = store->read_log(origin);
  ASSERT_TRUE(origin_log) << origin_log.error().message;
  EXPECT_EQ(origin_log->events, (std::vector<Event>{made, install}));
  const auto record = fold_record(origin, *origin_log);
  EXPECT_EQ(record.installed_copies, (std::vector<Event>{install}));
  EXPECT_EQ(record.producers, (std::vector<Event>{made}));
  EXPECT_TRUE(record.consumers.empty());
  EXPECT_TRUE(record.problems.empty()) << record.problems.front().message;

  auto copy_log = store->read_log(copy);
  ASSERT_TRUE(copy_log) << copy_log.error().message;
  EXPECT_EQ(copy_log->events, (std::vector<Event>{install}));

  // The link is in the origin's log only: the install's build lists its
  // event once.
  auto builds = store->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_EQ(names_of(*builds), (Names{{"lib", "1"}, {"lib", "1-install"}}));
  auto install_build = store->read_build({"lib", "1-install"});
  ASSERT_TRUE(install_build) << install_build.error().message;
  EXPECT_EQ(install_build->events, (std::vector<Event>{install}));
  auto lib_build = store->read_build({"lib", "1"});
  ASSERT_TRUE(lib_build) << lib_build.error().message;
  EXPECT_EQ(lib_build->events, (std::vector<Event>{made}));
}

// lib is consumed by tool and app, and installed as lib_copy, which ext
// consumes; app's product is consumed by pkg, whose product loop consumed
// to make lib again: a cycle.
class ConsumerGraph
{
public:
  const DigestKey lib = key_of('1'), app = key_of('2'), tool = key_of('3'), pkg = key_of('4'), lib_copy = key_of('5'),
                  ext = key_of('6');
  const Event tool_of_lib = consumed(lib, tool, "tool", "1");
  const Event app_of_lib = consumed(lib, app, "app", "1");
  const Event install = installed(lib_copy, lib, "lib", "1-install");
  const Event ext_of_copy = consumed(lib_copy, ext, "ext", "1");
  const Event pkg_of_app = consumed(app, pkg, "pkg", "1");
  const Event loop_of_pkg = consumed(pkg, lib, "loop", "1");

  ::testing::AssertionResult
  write(const Store& store) const
  {
    const std::vector<std::vector<Event>> batches{{produced(lib, "lib", "1")},
                                                  {tool_of_lib, produced(tool, "tool", "1")},
                                                  {app_of_lib, produced(app, "app", "1")},
                                                  {install},
                                                  {ext_of_copy, produced(ext, "ext", "1")},
                                                  {pkg_of_app, produced(pkg, "pkg", "1")},
                                                  {loop_of_pkg}};
    for (const auto& batch : batches) {
      if (auto ok = store.append(batch); !ok) {
        return ::testing::AssertionFailure() << ok.error().message;
      }
    }
    if (auto ok = store.append_link(lib, install); !ok) {
      return ::testing::AssertionFailure() << ok.error().message;
    }
    return ::testing::AssertionSuccess();
  }
};

TEST_P(StoreConformance, ConsumersAreFoundDirectlyTransitivelyAndThroughInstalledCopiesInBreadthFirstOrder)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const ConsumerGraph graph;
  ASSERT_TRUE(graph.write(*store));
  using Hits = std::vector<std::pair<Event, int>>;

  std::vector<LogProblem> problems;
  auto direct = store->find_consumers(graph.lib, false, problems);
  ASSERT_TRUE(direct) << direct.error().message;
  // The installed copy's consumer is as near as the artifact's own.
  EXPECT_EQ(hits_of(*direct), (Hits{{graph.tool_of_lib, 1}, {graph.app_of_lib, 1}, {graph.ext_of_copy, 1}}));

  auto transitive = store->find_consumers(graph.lib, true, problems);
  ASSERT_TRUE(transitive) << transitive.error().message;
  EXPECT_EQ(hits_of(*transitive),
            (Hits{{graph.tool_of_lib, 1},
                  {graph.app_of_lib, 1},
                  {graph.ext_of_copy, 1},
                  {graph.pkg_of_app, 2},
                  {graph.loop_of_pkg, 3}}));

  // From inside the cycle: lib comes round again at depth 2, and pkg's own
  // consumer edge is met once more at depth 3, then the walk ends.
  auto from_pkg = store->find_consumers(graph.pkg, true, problems);
  ASSERT_TRUE(from_pkg) << from_pkg.error().message;
  EXPECT_EQ(hits_of(*from_pkg),
            (Hits{{graph.loop_of_pkg, 1},
                  {graph.tool_of_lib, 2},
                  {graph.app_of_lib, 2},
                  {graph.ext_of_copy, 2},
                  {graph.pkg_of_app, 3}}));

  auto of_leaf = store->find_consumers(graph.ext, true, problems);
  ASSERT_TRUE(of_leaf) << of_leaf.error().message;
  EXPECT_TRUE(of_leaf->empty());
  EXPECT_TRUE(problems.empty()) << problems.front().message;
}

TEST_P(StoreConformance, TheChainFoundIsAShortestOneThroughConsumedAndInstalledSteps)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto src = key_of('a'), mid = key_of('b'), long1 = key_of('c'), long2 = key_of('d'), dest = key_of('e'),
             src_copy = key_of('f'), out = key_of('9');
  // The long way is appended first, so a walk that takes the first edge it
  // meets (depth first) finds it instead of the short one.
  const auto long_a = consumed(src, long1, "long", "1");
  const auto long_b = consumed(long1, long2, "long", "2");
  const auto long_c = consumed(long2, dest, "long", "3");
  const auto short_a = consumed(src, mid, "short", "1");
  const auto short_b = consumed(mid, dest, "short", "2");
  const auto install = installed(src_copy, src, "src", "1-install");
  const auto user = consumed(src_copy, out, "user", "1");
  ASSERT_TRUE(store->append({produced(src, "src", "1")}));
  ASSERT_TRUE(store->append({long_a, long_b, long_c}));
  ASSERT_TRUE(store->append({short_a, short_b}));
  ASSERT_TRUE(store->append({install}));
  ASSERT_TRUE(store->append_link(src, install));
  ASSERT_TRUE(store->append({user}));

  std::vector<LogProblem> problems;
  auto shortest = store->find_chain(src, dest, problems);
  ASSERT_TRUE(shortest) << shortest.error().message;
  EXPECT_EQ(*shortest, (std::vector<Event>{short_a, short_b}));

  auto through_install = store->find_chain(src, out, problems);
  ASSERT_TRUE(through_install) << through_install.error().message;
  EXPECT_EQ(*through_install, (std::vector<Event>{install, user}));

  auto one_step = store->find_chain(long2, dest, problems);
  ASSERT_TRUE(one_step) << one_step.error().message;
  EXPECT_EQ(*one_step, (std::vector<Event>{long_c}));

  auto backwards = store->find_chain(dest, src, problems);
  ASSERT_TRUE(backwards) << backwards.error().message;
  EXPECT_TRUE(backwards->empty());
  auto unrecorded = store->find_chain(src, key_of('8'), problems);
  ASSERT_TRUE(unrecorded) << unrecorded.error().message;
  EXPECT_TRUE(unrecorded->empty());
  auto itself = store->find_chain(src, src, problems);
  ASSERT_TRUE(itself) << itself.error().message;
  EXPECT_TRUE(itself->empty());
  EXPECT_TRUE(problems.empty()) << problems.front().message;
}

TEST_P(StoreConformance, RemovingEventsCountsOnADryRunAndRemovesExactlyTheSelectedOnes)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto a = key_of('a'), b = key_of('b'), c = key_of('c');
  const auto made_a = produced(a, "up", "1");
  const auto use_7 = consumed(a, b, "app", "7");
  const auto made_b = produced(b, "app", "7");
  const auto use_8 = consumed(a, c, "app", "8");
  const auto made_c = produced(c, "app", "8");
  ASSERT_TRUE(store->append({made_a}));
  ASSERT_TRUE(store->append({use_7, made_b}));
  ASSERT_TRUE(store->append({use_8, made_c}));
  const auto of_build_7 = [](const Event& event) { return event.build == "7"; };

  auto counted = store->remove_events(a, of_build_7, true);
  ASSERT_TRUE(counted) << counted.error().message;
  EXPECT_EQ(counted->events_before, 3u);
  EXPECT_EQ(counted->events_after, 2u);
  EXPECT_FALSE(counted->removed);
  auto untouched = store->read_log(a);
  ASSERT_TRUE(untouched) << untouched.error().message;
  EXPECT_EQ(untouched->events, (std::vector<Event>{made_a, use_7, use_8})) << "a dry run changed the log";

  auto removed = store->remove_events(a, of_build_7, false);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_EQ(removed->events_before, 3u);
  EXPECT_EQ(removed->events_after, 2u);
  EXPECT_FALSE(removed->removed);
  auto log = store->read_log(a);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->events, (std::vector<Event>{made_a, use_8}));
  // Only the log: gc cleans logs first and indexes last, so that an
  // interrupted run still finds the logs it has not cleaned through them.
  auto index_7 = store->read_build({"app", "7"});
  ASSERT_TRUE(index_7) << index_7.error().message;
  EXPECT_EQ(index_7->events, (std::vector<Event>{use_7, made_b}));

  const auto everything = [](const Event&) { return true; };
  auto would_empty = store->remove_events(b, everything, true);
  ASSERT_TRUE(would_empty) << would_empty.error().message;
  EXPECT_EQ(would_empty->events_before, 1u);
  EXPECT_EQ(would_empty->events_after, 0u);
  EXPECT_TRUE(would_empty->removed) << "a dry run tells that the log would go";
  auto still_b = store->read_log(b);
  ASSERT_TRUE(still_b) << still_b.error().message;
  EXPECT_EQ(still_b->events, (std::vector<Event>{made_b}));
  auto emptied = store->remove_events(b, everything, false);
  ASSERT_TRUE(emptied) << emptied.error().message;
  EXPECT_TRUE(emptied->removed);
  auto gone = store->read_log(b);
  ASSERT_TRUE(gone) << gone.error().message;
  EXPECT_TRUE(gone->events.empty());
  auto gone_raw = store->read_raw_log(b);
  ASSERT_TRUE(gone_raw) << gone_raw.error().message;
  EXPECT_EQ(*gone_raw, "");

  const auto is_consumed = [](const Event& event) { return event.event == EventKind::consumed; };
  auto index_counted = store->remove_build_events({"app", "8"}, is_consumed, true);
  ASSERT_TRUE(index_counted) << index_counted.error().message;
  EXPECT_EQ(index_counted->events_before, 2u);
  EXPECT_EQ(index_counted->events_after, 1u);
  EXPECT_FALSE(index_counted->removed);
  auto index_8 = store->read_build({"app", "8"});
  ASSERT_TRUE(index_8) << index_8.error().message;
  EXPECT_EQ(index_8->events, (std::vector<Event>{use_8, made_c})) << "a dry run changed the index";
  auto index_removed = store->remove_build_events({"app", "8"}, is_consumed, false);
  ASSERT_TRUE(index_removed) << index_removed.error().message;
  EXPECT_EQ(index_removed->events_after, 1u);
  index_8 = store->read_build({"app", "8"});
  ASSERT_TRUE(index_8) << index_8.error().message;
  EXPECT_EQ(index_8->events, (std::vector<Event>{made_c}));
  auto log_after = store->read_log(a);
  ASSERT_TRUE(log_after) << log_after.error().message;
  EXPECT_EQ(log_after->events, (std::vector<Event>{made_a, use_8})) << "removing from an index changed a log";

  auto index_emptied = store->remove_build_events({"app", "8"}, everything, false);
  ASSERT_TRUE(index_emptied) << index_emptied.error().message;
  EXPECT_TRUE(index_emptied->removed);
  auto builds = store->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_EQ(names_of(*builds), (Names{{"app", "7"}, {"up", "1"}}));
}

// The directory store checks every digest before it writes anything, so a
// batch with a bad one stores nothing there either; but it writes log by log,
// so a failure part-way (a full disk) would leave part of the batch, where
// the database rolls the whole batch back.
TEST_P(StoreConformance, AnEventWithAnInvalidDigestFailsItsBatchAndNothingOfItIsStored)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto a = key_of('a');
  auto bad = produced(key_of('b'), "app", "1");
  bad.digest = "sha256:" + std::string(63, 'b') + "g";
  auto appended = store->append({produced(a, "app", "1"), consumed(a, key_of('c'), "app", "1"), bad});
  ASSERT_FALSE(appended);
  EXPECT_NE(appended.error().message.find("sha256:" + std::string(63, 'b') + "g"), std::string::npos)
    << "the error does not name the bad digest: " << appended.error().message;

  auto log = store->read_log(a);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_TRUE(log->events.empty());
  auto builds = store->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_TRUE(builds->empty());
}

// An event that its own log could not read back (parse_event refuses it)
// must be refused when appended, not stored as a line every later reader
// reports and every compaction refuses.
TEST_P(StoreConformance, AnEventThatCouldNotBeReadBackFailsItsBatch)
{
  const auto a = key_of('a');
  auto relative_path = consumed(a, key_of('b'), "app", "1");
  relative_path.path = "build/liba.so";
  auto bad_product = consumed(a, key_of('b'), "app", "1");
  bad_product.product = "sha256:nothex";
  auto bad_from = installed(key_of('e'), a, "app", "1");
  bad_from.from = "sha256:short";
  const std::vector<std::pair<std::string, Event>> cases{
    {"a relative path", relative_path}, {"a bad product", bad_product}, {"a bad from", bad_from}};
  for (const auto& [what, bad] : cases) {
    SCOPED_TRACE(what);
    const auto store = open(Access::write);
    ASSERT_TRUE(store);
    auto appended = store->append({produced(a, "app", "1"), bad});
    EXPECT_FALSE(appended);
    if (is_postgresql()) {
      auto log = store->read_log(a);
      ASSERT_TRUE(log) << log.error().message;
      EXPECT_TRUE(log->events.empty()) << "part of a refused batch was stored";
      EXPECT_TRUE(log->problems.empty()) << log->problems.front().message;
    }
  }
}

TEST_P(StoreConformance, AStoreNeverWrittenReadsAsEmptyAndReadingCreatesNothing)
{
  const auto store = open(Access::read);
  ASSERT_TRUE(store);
  const auto a = key_of('a');
  auto log = store->read_log(a);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_TRUE(log->events.empty());
  auto raw = store->read_raw_log(a);
  ASSERT_TRUE(raw) << raw.error().message;
  EXPECT_EQ(*raw, "");
  auto builds = store->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_TRUE(builds->empty());
  auto build = store->read_build({"app", "1"});
  ASSERT_TRUE(build) << build.error().message;
  EXPECT_TRUE(build->events.empty());
  std::vector<LogProblem> problems;
  auto consumers = store->find_consumers(a, true, problems);
  ASSERT_TRUE(consumers) << consumers.error().message;
  EXPECT_TRUE(consumers->empty());
  auto chain = store->find_chain(a, key_of('b'), problems);
  ASSERT_TRUE(chain) << chain.error().message;
  EXPECT_TRUE(chain->empty());
  auto report = store->fsck({});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->logs, 0u);
  EXPECT_EQ(report->build_indexes, 0u);
  EXPECT_EQ(report->events, 0u);
  EXPECT_TRUE(report->findings.empty());

  if (is_postgresql()) {
    EXPECT_EQ(sql("SELECT to_regclass('fingerprint_events')"), std::nullopt) << "a reader created the tables";
    EXPECT_EQ(sql("SELECT to_regclass('fingerprint_schema')"), std::nullopt) << "a reader created the tables";
  } else {
    EXPECT_FALSE(std::filesystem::exists(m_location)) << "a reader created the store";
  }
}

TEST_P(StoreConformance, FsckOfAHealthyStoreFindsNothingAndCountsLikeTheDirectoryStore)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto a = key_of('a'), b = key_of('b'), e = key_of('e');
  const auto install = installed(e, a, "up", "1-install");
  ASSERT_TRUE(store->append({produced(a, "up", "1")}));
  ASSERT_TRUE(store->append({consumed(a, b, "app", "7"), produced(b, "app", "7")}));
  ASSERT_TRUE(store->append({install}));
  ASSERT_TRUE(store->append_link(a, install));

  for (const bool repair : {false, true}) {
    SCOPED_TRACE(repair ? "repair" : "check");
    FsckOptions options;
    options.repair = repair;
    auto report = store->fsck(options);
    ASSERT_TRUE(report) << report.error().message;
    // Logs a (3 events: produced, consumed, the install's link), b (1) and
    // e (1); indexes up/1 (1), app/7 (2) and up/1-install (1): every event
    // counted once in its log and once in its index, the link once.
    EXPECT_EQ(report->logs, 3u);
    EXPECT_EQ(report->build_indexes, 3u);
    EXPECT_EQ(report->events, 9u);
    EXPECT_TRUE(report->findings.empty()) << report->findings.front().file << ": " << report->findings.front().problem;
    EXPECT_EQ(report->repaired, 0u);
    EXPECT_EQ(report->events_restored, 0u);
    EXPECT_EQ(report->quarantine, "");
  }
}

// Writer processes, not threads: each has its own store handle (its own
// connection), as concurrent `fingerprint record` runs have. On PostgreSQL
// the database starts without tables, so the writers also race to create
// them.
// An input manifest as the recorder stores one: normalized, encoded, named.
struct StoredManifest
{
  DigestKey key;
  std::string encoded;
  Manifest manifest;
};

StoredManifest
manifest_of(std::vector<ManifestEntry> entries)
{
  StoredManifest stored;
  stored.manifest.entries = std::move(entries);
  normalize(stored.manifest);
  stored.encoded = encode(stored.manifest);
  auto key = manifest_key(stored.manifest.algorithm, stored.encoded);
  EXPECT_TRUE(key) << key.error().message;
  stored.key = key ? *key : DigestKey{};
  return stored;
}

Event
produced_from(const DigestKey& artifact,
              const StoredManifest& manifest,
              const std::string& project,
              const std::string& build)
{
  Event event = produced(artifact, project, build);
  event.inputs = manifest.key.str();
  return event;
}

// What a query reports of a manifest entry: `input` read by `product` of
// `project`'s build `build` (a produced event by produced()).
Event
read_by(const DigestKey& input,
        const DigestKey& product,
        const std::string& project,
        const std::string& build,
        uint64_t size,
        const std::string& path,
        const std::string& role)
{
  Event event = consumed(input, product, project, build);
  event.path = path; // where the manifest says it was read
  event.size = size;
  event.role = role;
  return event;
}

// Digests cut short, as `show sha256:1f2e3d4c` takes them: the artifacts
// with a log and the inputs only a manifest lists, each once, sorted,
// at most as many as asked for.
TEST_P(StoreConformance, ArtifactsAreFoundByTheBeginningOfTheirDigest)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  auto key = [](std::string_view head) {
    return DigestKey{digest::Algorithm::sha256, std::string(head) + std::string(64 - head.size(), '0')};
  };
  const auto a1 = key("abcd1234aa"), a2 = key("abcd1234bb"), a3 = key("abcd12350"), header = key("abcd1234cc"),
             other = key("ffff");
  const auto m = manifest_of({{Role::compile, header.hex, 11, "/inc/h.h"}, {Role::link, a1.hex, 5, "/lib/a1.a"}});
  ASSERT_TRUE(store->put_manifest(m.key, m.encoded, m.manifest));
  ASSERT_TRUE(store->append({produced(a1, "p", "1"), produced(a3, "p", "1"), produced(other, "p", "1")}));
  ASSERT_TRUE(store->append_call(std::string(32, 'c'), {produced_from(a2, m, "p", "2")}));
  using Keys = std::vector<DigestKey>;
  auto found = store->find_by_prefix(digest::Algorithm::sha256, "abcd1234", 10);
  ASSERT_TRUE(found) << found.error().message;
  // a1 has a log and is a manifest's input too: once.
  EXPECT_EQ(*found, (Keys{a1, a2, header}));
  auto limited = store->find_by_prefix(digest::Algorithm::sha256, "abcd1234", 2);
  ASSERT_TRUE(limited) << limited.error().message;
  EXPECT_EQ(*limited, (Keys{a1, a2}));
  auto one = store->find_by_prefix(digest::Algorithm::sha256, "abcd1235", 10);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(*one, Keys{a3});
  auto none = store->find_by_prefix(digest::Algorithm::sha256, "abcd1236", 10);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, Keys{});
  auto other_algorithm = store->find_by_prefix(digest::Algorithm::sha512, "abcd1234", 10);
  ASSERT_TRUE(other_algorithm) << other_algorithm.error().message;
  EXPECT_EQ(*other_algorithm, Keys{});
}

// A build's provenance (store/provenance.hpp): written once, read back as
// written, refused when it names another build, removed on request; a
// database makes its table on first use.
TEST_P(StoreConformance, ABuildsProvenanceIsWrittenOnceAndReadBackAsWritten)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const BuildRef build{"p", "3-0badcafe"};
  auto document = [](const std::string& b, const std::string& commit) {
    return R"({"provenance":1,"project":"p","build":")" + b + R"(","source":{"commit":")" + commit + "\"}}\n";
  };
  auto none = store->read_provenance(build);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(*none);
  auto first = store->put_provenance(build, document("3-0badcafe", "aaaa"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  auto again = store->put_provenance(build, document("3-0badcafe", "bbbb"));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(*again);
  auto read = store->read_provenance(build);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(*read);
  EXPECT_EQ(**read, document("3-0badcafe", "aaaa"));
  EXPECT_FALSE(store->put_provenance({"p", "4"}, document("3-0badcafe", "cccc"))) << "it names another build";
  auto other = store->read_provenance({"p", "4"});
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other);
  auto dry = store->remove_provenance(build, true);
  ASSERT_TRUE(dry) << dry.error().message;
  EXPECT_TRUE(*dry);
  ASSERT_TRUE(store->read_provenance(build).value());
  auto removed = store->remove_provenance(build, false);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(store->read_provenance(build).value());
}

// After a read of every build (which a database follows by reading every
// build's provenance at once), each build's provenance reads as it does
// alone, and a document added or removed since shows.
TEST_P(StoreConformance, ProvenanceAfterAReadOfEveryBuildIsEachBuildsOwn)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  auto document = [](const std::string& b, const std::string& commit) {
    return R"({"provenance":1,"project":"p","build":")" + b + R"(","source":{"commit":")" + commit + "\"}}\n";
  };
  const BuildRef first{"p", "1-0badcafe"}, second{"p", "2-0badcafe"};
  ASSERT_TRUE(store->append({produced(numbered_key(0x71), "p", first.build)}));
  ASSERT_TRUE(store->append({produced(numbered_key(0x72), "p", second.build)}));
  ASSERT_TRUE(store->put_provenance(first, document(first.build, "aaaa")).value());
  size_t builds = 0;
  ASSERT_TRUE(store->for_each_build({}, [&](const BuildRef&, LogContents&) { ++builds; }));
  EXPECT_EQ(builds, 2U);
  auto read = store->read_provenance(first);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(*read) << "the first build's provenance, after a read of every build";
  EXPECT_EQ(**read, document(first.build, "aaaa"));
  EXPECT_FALSE(store->read_provenance(second).value()) << "the second build has none";
  ASSERT_TRUE(store->put_provenance(second, document(second.build, "bbbb")).value());
  read = store->read_provenance(second);
  ASSERT_TRUE(read && *read) << "a document added since reads back";
  EXPECT_EQ(**read, document(second.build, "bbbb"));
  ASSERT_TRUE(store->remove_provenance(first, false).value());
  EXPECT_FALSE(store->read_provenance(first).value()) << "a document removed since is gone";
}

// A call through the recorder's way (manifest first, then one produced
// event per product naming it): consumers, chains and records answer the
// same on both backends, with each entry's role and path; an unchanged
// relink puts no manifest again.
TEST_P(StoreConformance, InputsInAManifestAreConsumersWithTheirRolesAndPathsInConsumersChainsAndRecords)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto lib = key_of('1'), header = key_of('2'), app = key_of('3'), app_debug = key_of('4'), pkg = key_of('5'),
             tool = key_of('6');
  // The header read through two paths (the last of them is the path its
  // compile edge reports) and also declared.
  const auto m1 = manifest_of({{Role::link, lib.hex, 100, "/usr/lib/libz.a"},
                               {Role::compile, header.hex, 11, "/inc/h.h"},
                               {Role::compile, header.hex, 11, "/inc/again/h.h"},
                               {Role::declared, header.hex, 11, "/inc/h.h"}});
  const auto m2 = manifest_of({{Role::link, app.hex, 5000, "/build/app/app"}});
  const auto old_edge = consumed(lib, tool, "tool", "1"); // an older store's consumed event
  const auto made_app = produced_from(app, m1, "app", "2");
  const auto made_debug = produced_from(app_debug, m1, "app", "2");
  const auto made_pkg = produced_from(pkg, m2, "pkg", "3");
  ASSERT_TRUE(store->append({old_edge}));
  for (const auto* manifest : {&m1, &m2}) {
    auto put = store->put_manifest(manifest->key, manifest->encoded, manifest->manifest);
    ASSERT_TRUE(put) << put.error().message;
    EXPECT_TRUE(*put) << "a new manifest";
  }
  ASSERT_TRUE(store->append_call(std::string(32, 'a'), {made_app, made_debug}));
  ASSERT_TRUE(store->append_call(std::string(32, 'b'), {made_pkg}));
  // The relink of app, unchanged: the manifest is there already.
  auto again = store->put_manifest(m1.key, m1.encoded, m1.manifest);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(*again) << "an unchanged relink stored its manifest again";
  if (is_postgresql()) {
    EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_manifests"), "2");
    EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_manifest_entries"), "5");
  }

  auto read = store->read_manifest(m1.key);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(*read) << "no manifest " << m1.key.str();
  EXPECT_EQ((*read)->entries, m1.manifest.entries);
  auto absent = store->read_manifest(key_of('9'));
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_FALSE(*absent);
  std::vector<LogProblem> problems;
  auto uses = store->find_manifest_uses(header, problems);
  ASSERT_TRUE(uses) << uses.error().message;
  EXPECT_EQ(*uses, (std::vector<ManifestUse>{{m1.key}})); // listed in two roles, indexed once
  // The manifest's log: the products made from it.
  auto users = store->read_log(m1.key);
  ASSERT_TRUE(users) << users.error().message;
  EXPECT_EQ(users->events, (std::vector<Event>{made_app, made_debug}));

  const auto app_reads = [&](const DigestKey& product, const std::string& path, const std::string& role) {
    return read_by(header, product, "app", "2", 11, path, role);
  };
  const auto header_direct = std::vector<Event>{app_reads(app, "/inc/h.h", "compile"),
                                                app_reads(app_debug, "/inc/h.h", "compile"),
                                                app_reads(app, "/inc/h.h", "declared"),
                                                app_reads(app_debug, "/inc/h.h", "declared")};
  const auto pkg_reads_app = read_by(app, pkg, "pkg", "3", 5000, "/build/app/app", "link");
  using Hits = std::vector<std::pair<Event, int>>;
  auto of_lib = store->find_consumers(lib, false, problems);
  ASSERT_TRUE(of_lib) << of_lib.error().message;
  EXPECT_EQ(hits_of(*of_lib),
            (Hits{{old_edge, 1},
                  {read_by(lib, app, "app", "2", 100, "/usr/lib/libz.a", "link"), 1},
                  {read_by(lib, app_debug, "app", "2", 100, "/usr/lib/libz.a", "link"), 1}}));
  auto of_header = store->find_consumers(header, true, problems);
  ASSERT_TRUE(of_header) << of_header.error().message;
  EXPECT_EQ(
    hits_of(*of_header),
    (Hits{
      {header_direct[0], 1}, {header_direct[1], 1}, {header_direct[2], 1}, {header_direct[3], 1}, {pkg_reads_app, 2}}));
  auto direct = store->find_consumers(header, false, problems);
  ASSERT_TRUE(direct) << direct.error().message;
  EXPECT_EQ(direct->size(), 4u);

  auto chain = store->find_chain(header, pkg, problems);
  ASSERT_TRUE(chain) << chain.error().message;
  EXPECT_EQ(*chain, (std::vector<Event>{header_direct[0], pkg_reads_app}));

  // show's record: the manifests' edges, and every path the input was read by.
  auto record = load_record(*store, header);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->consumers, header_direct);
  EXPECT_TRUE(record->producers.empty());
  EXPECT_EQ(record->names, (std::vector<std::string>{"/inc/again/h.h", "/inc/h.h"}));
  EXPECT_EQ(record->size, 11u);
  auto of_app = load_record(*store, app);
  ASSERT_TRUE(of_app) << of_app.error().message;
  EXPECT_EQ(of_app->producers, (std::vector<Event>{made_app}));
  EXPECT_EQ(of_app->consumers, (std::vector<Event>{pkg_reads_app}));
  EXPECT_TRUE(problems.empty()) << problems.front().message;

  FsckOptions options;
  auto report = store->fsck(options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->findings.empty()) << report->findings.front().file << ": " << report->findings.front().problem;
}

TEST_P(StoreConformance, SixteenWriterProcessesLoseAndDuplicateNothing)
{
  constexpr int k_writers = 16;
  constexpr int k_calls = 50;
  const DigestKey shared = key_of('a');
  const auto own_key = [](int writer) { return numbered_key(0xb0000u + static_cast<unsigned>(writer)); };
  const auto product_key = [](int writer, int call) {
    return numbered_key(0xc00000u + static_cast<unsigned>(writer * 1000 + call));
  };
  const auto batch_of = [&](int writer, int call) {
    const std::string project = "writer" + std::to_string(writer);
    const std::string build = std::to_string(call);
    const auto product = product_key(writer, call);
    return std::vector<Event>{produced(product, project, build),
                              consumed(shared, product, project, build),
                              consumed(own_key(writer), product, project, build)};
  };

  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> writers;
  for (int w = 0; w < k_writers; ++w) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      break;
    }
    if (pid == 0) {
      ::close(gate[1]);
      char byte;
      while (::read(gate[0], &byte, 1) > 0) {
      } // the parent closing its end opens the gate for all at once
      auto store = open_store(m_location, Access::write);
      if (!store) {
        std::fprintf(stderr, "writer %d: %s\n", w, store.error().message.c_str());
        ::_exit(1);
      }
      for (int i = 0; i < k_calls; ++i) {
        if (auto ok = (*store)->append(batch_of(w, i)); !ok) {
          std::fprintf(stderr, "writer %d, call %d: %s\n", w, i, ok.error().message.c_str());
          ::_exit(1);
        }
      }
      ::_exit(0);
    }
    writers.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  // Bounded: a writer stuck on a lock fails the test instead of hanging it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  for (size_t w = 0; w < writers.size(); ++w) {
    const pid_t pid = writers[w];
    int status = 0;
    pid_t waited = 0;
    while ((waited = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (waited == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "writer " << w << " still running after 5 minutes";
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << w << " failed (its message is above)";
  }
  ASSERT_EQ(writers.size(), static_cast<size_t>(k_writers));

  const auto store = open(Access::read);
  ASSERT_TRUE(store);
  auto log = store->read_log(shared);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_TRUE(log->problems.empty());
  EXPECT_FALSE(log->torn_tail);
  EXPECT_EQ(log->events.size(), static_cast<size_t>(k_writers * k_calls)) << "written vs read back";
  std::set<std::pair<std::string, std::string>> seen;
  std::set<std::pair<std::string, std::string>> expected;
  for (int w = 0; w < k_writers; ++w) {
    for (int i = 0; i < k_calls; ++i) {
      expected.emplace("writer" + std::to_string(w), std::to_string(i));
    }
  }
  // 2,400 checks: count the wrong ones and show the first, not all.
  size_t wrong = 0;
  const auto check = [&](const std::vector<Event>& got, const std::vector<Event>& want, const std::string& what) {
    if (got != want && wrong++ == 0) {
      ADD_FAILURE() << what << ": read back\n"
                    << ::testing::PrintToString(got) << "\ninstead of\n"
                    << ::testing::PrintToString(want);
    }
  };
  for (const auto& event : log->events) {
    check({event}, {batch_of(std::stoi(event.project.substr(6)), std::stoi(event.build))[1]}, "the shared log");
    seen.emplace(event.project, event.build);
  }
  EXPECT_EQ(seen, expected) << "an event is missing or was stored twice";

  for (int w = 0; w < k_writers; ++w) {
    auto own = store->read_log(own_key(w));
    ASSERT_TRUE(own) << own.error().message;
    EXPECT_EQ(own->events.size(), static_cast<size_t>(k_calls)) << "writer " << w;
    for (int i = 0; i < k_calls; ++i) {
      const auto batch = batch_of(w, i);
      const std::string call = "writer " + std::to_string(w) + ", call " + std::to_string(i);
      auto made = store->read_log(product_key(w, i));
      ASSERT_TRUE(made) << made.error().message;
      check(made->events, {batch[0]}, call + ", the product's log");
      auto index = store->read_build({"writer" + std::to_string(w), std::to_string(i)});
      ASSERT_TRUE(index) << index.error().message;
      check(index->events, batch, call + ", the build index");
    }
  }
  EXPECT_EQ(wrong, 0u) << "logs or indexes read back wrong (the first is shown above)";
  auto builds = store->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  const auto names = names_of(*builds);
  const std::set<std::pair<std::string, std::string>> listed(names.begin(), names.end());
  EXPECT_EQ(listed, expected);
  EXPECT_EQ(names.size(), expected.size());
}

// What only the database has: a migration from a directory store, and a
// schema version.
class PostgresStoreOnly : public FreshStore
{
protected:
  void
  SetUp() override
  {
    prepare("postgresql");
  }
};

TEST_F(PostgresStoreOnly, ImportCopiesADirectoryStoreOnceAndAnswersAsItDoes)
{
  test::TempDir dir;
  const std::string root = dir / "store";
  const auto a = key_of('a'), b = key_of('b'), e = key_of('e');
  const auto made_a = produced(a, "up", "1");
  const auto use = consumed(a, b, "app", "7");
  const auto made_b = produced(b, "app", "7");
  const auto install = installed(e, a, "up", "1-install");
  {
    auto source = open_store(root, Access::write);
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_TRUE((*source)->append({made_a}));
    ASSERT_TRUE((*source)->append({use, made_b}));
    ASSERT_TRUE((*source)->append({install}));
    ASSERT_TRUE((*source)->append_link(a, install));
    ASSERT_TRUE((*source)->append({use})); // the same event twice: both are kept
  }
  auto source = DirectoryStore::open_for_reading(root);
  ASSERT_TRUE(source) << source.error().message;
  auto target = PostgresStore::open(m_location, Access::write);
  ASSERT_TRUE(target) << target.error().message;

  std::vector<std::pair<size_t, size_t>> progress;
  auto first = migrate(*source, **target, [&](size_t done, size_t total) { progress.emplace_back(done, total); });
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->logs, 3u);
  EXPECT_EQ(first->events_read, 6u);
  EXPECT_EQ(first->events_copied, 6u);
  EXPECT_EQ(first->events_present, 0u);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().first, progress.back().second);

  const auto check_log = [&](const DigestKey& key, const std::vector<Event>& events) {
    auto log = (*target)->read_log(key);
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_EQ(log->events, events) << key.str();
    std::string lines;
    for (const auto& event : events) {
      lines += serialize(event) + "\n";
    }
    auto raw = (*target)->read_raw_log(key);
    ASSERT_TRUE(raw) << raw.error().message;
    EXPECT_EQ(*raw, lines) << key.str();
  };
  check_log(a, {made_a, use, install, use});
  check_log(b, {made_b});
  check_log(e, {install});
  auto builds = (*target)->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_EQ(names_of(*builds), (Names{{"app", "7"}, {"up", "1"}, {"up", "1-install"}}));
  // Only the logs are read, so an index's order across logs is not kept:
  // its events are compared as a set, each as often as it was appended.
  for (const auto& [build, events] : std::vector<std::pair<BuildRef, std::vector<Event>>>{
         {{"app", "7"}, {use, made_b, use}}, {{"up", "1"}, {made_a}}, {{"up", "1-install"}, {install}}}) {
    auto index = (*target)->read_build(build);
    ASSERT_TRUE(index) << index.error().message;
    EXPECT_EQ(sorted_lines(index->events), sorted_lines(events)) << build.project << " " << build.build;
  }

  auto second = migrate(*source, **target, {});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->logs, 3u);
  EXPECT_EQ(second->events_read, 6u);
  EXPECT_EQ(second->events_copied, 0u);
  EXPECT_EQ(second->events_present, 6u);
  check_log(a, {made_a, use, install, use});

  // A third copy of the repeated event in the directory: the database has
  // two, so exactly one more is copied.
  {
    auto source_writer = open_store(root, Access::write);
    ASSERT_TRUE(source_writer) << source_writer.error().message;
    ASSERT_TRUE((*source_writer)->append({use}));
  }
  auto third = migrate(*source, **target, {});
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->events_read, 7u);
  EXPECT_EQ(third->events_copied, 1u);
  EXPECT_EQ(third->events_present, 6u);
  check_log(a, {made_a, use, install, use, use});
}

TEST_F(PostgresStoreOnly, ImportCopiesBuildsProvenanceOnce)
{
  test::TempDir dir;
  const std::string root = dir / "store";
  const std::string text = R"({"provenance":1,"project":"up","build":"1","source":null})"
                           "\n";
  {
    auto source = open_store(root, Access::write);
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_TRUE((*source)->append({produced(key_of('a'), "up", "1")}));
    ASSERT_TRUE((*source)->put_provenance({"up", "1"}, text));
  }
  auto source = DirectoryStore::open_for_reading(root);
  ASSERT_TRUE(source) << source.error().message;
  auto target = PostgresStore::open(m_location, Access::write);
  ASSERT_TRUE(target) << target.error().message;
  auto first = migrate(*source, **target, {});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->provenance_copied, 1u);
  EXPECT_EQ(first->provenance_present, 0u);
  auto read = (*target)->read_provenance({"up", "1"});
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(*read);
  EXPECT_EQ(**read, text);
  auto second = migrate(*source, **target, {});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->provenance_copied, 0u);
  EXPECT_EQ(second->provenance_present, 1u);
}

TEST_F(PostgresStoreOnly, ImportRefusesADirectoryWithACorruptLogAndLeavesTheDatabaseAsItWas)
{
  test::TempDir dir;
  const std::string root = dir / "store";
  const auto before = produced(key_of('0'), "before", "1");
  auto target = PostgresStore::open(m_location, Access::write);
  ASSERT_TRUE(target) << target.error().message;
  ASSERT_TRUE((*target)->append({before}));

  // Several good logs besides the corrupt one, so that whatever order the
  // directory lists them in, some come before it.
  const auto corrupt = key_of('c');
  const std::string good = "12345678";
  {
    auto source = open_store(root, Access::write);
    ASSERT_TRUE(source) << source.error().message;
    std::vector<Event> events;
    for (const char c : good) {
      events.push_back(produced(key_of(c), "proj", "1"));
    }
    events.push_back(produced(corrupt, "proj", "1"));
    ASSERT_TRUE((*source)->append(events));
  }
  const std::string log_file = root + "/" + corrupt.log_path();
  test::write_file(log_file, test::read_file(log_file) + "not an event\n");
  auto source = DirectoryStore::open_for_reading(root);
  ASSERT_TRUE(source) << source.error().message;

  auto imported = migrate(*source, **target, {});
  ASSERT_FALSE(imported);
  EXPECT_NE(imported.error().message.find(corrupt.hex), std::string::npos)
    << "the error does not name the corrupt log: " << imported.error().message;

  auto builds = (*target)->list_builds();
  ASSERT_TRUE(builds) << builds.error().message;
  EXPECT_EQ(names_of(*builds), (Names{{"before", "1"}}));
  for (const char c : good + "c") {
    auto log = (*target)->read_log(key_of(c));
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_TRUE(log->events.empty()) << "copied from a directory the import refused: " << key_of(c).str();
  }
  auto kept = (*target)->read_log(key_of('0'));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->events, (std::vector<Event>{before}));
}

TEST_F(PostgresStoreOnly, ADatabaseOfANewerSchemaIsRefusedWithBothVersionsNamed)
{
  {
    auto store = open(Access::write);
    ASSERT_TRUE(store);
  }
  EXPECT_EQ(sql("SELECT max(version) FROM fingerprint_schema"), std::to_string(k_schema_version));
  const int newer = k_schema_version + 7;
  sql("UPDATE fingerprint_schema SET version = " + std::to_string(newer));

  for (const Access access : {Access::read, Access::write}) {
    SCOPED_TRACE(access == Access::read ? "read" : "write");
    auto store = PostgresStore::open(m_location, access);
    ASSERT_FALSE(store) << "opened a database of schema version " << newer;
    // The URL holds digits of its own (the port, the address).
    std::string message = store.error().message;
    for (size_t at; (at = message.find(m_location)) != std::string::npos;) {
      message.erase(at, m_location.size());
    }
    EXPECT_TRUE(std::regex_search(message, std::regex("\\b" + std::to_string(newer) + "\\b"))) << store.error().message;
    EXPECT_TRUE(std::regex_search(message, std::regex("\\b" + std::to_string(k_schema_version) + "\\b")))
      << store.error().message;
  }
  EXPECT_EQ(sql("SELECT max(version) FROM fingerprint_schema"), std::to_string(newer))
    << "a refused open changed the schema version";
}

// The inserts and fsck take the event columns from k_event_fields; the
// schema is made by migrations that never change. A field given a column
// without a migration that adds it fails here, not in a user's database.
TEST_F(PostgresStoreOnly, EveryColumnOfTheEventFieldTableIsInTheSchemaWithItsType)
{
  {
    auto store = open(Access::write);
    ASSERT_TRUE(store);
  }
  size_t columns = 0;
  for (const EventField& field : k_event_fields) {
    if (field.column.empty()) {
      continue;
    }
    ++columns;
    EXPECT_EQ(sql("SELECT data_type FROM information_schema.columns WHERE table_name = 'fingerprint_events' AND "
                  "column_name = '"
                  + std::string(field.column) + "'"),
              std::string(postgresql::column_type(field)))
      << field.name << " (column " << field.column << ")";
  }
  EXPECT_EQ(columns, 7u) << "kind, digest, project, build, product, from_digest, inputs";
}

// A database an older runner made (schema version 1) takes the manifests'
// tables and column when a newer one writes to it, and keeps every row.
TEST_F(PostgresStoreOnly, AVersion1DatabaseIsMigratedToManifestsWithEveryEventKept)
{
  const auto a = key_of('a'), b = key_of('b');
  const auto made_a = produced(a, "old", "1");
  const auto use = consumed(a, b, "old", "1");
  sql(postgresql::migration_sql(1));
  sql("UPDATE fingerprint_schema SET version = 1");
  // Rows as a version 1 runner inserted them: its columns, no `inputs`.
  for (const Event* event : {&made_a, &use}) {
    sql("INSERT INTO fingerprint_events (log, logged, indexed, kind, digest, product, from_digest, project, build, "
        "line) VALUES ('"
        + a.str() + "', true, true, '" + std::string(event_kind_name(event->event)) + "', '" + event->digest + "', '"
        + event->product + "', '', 'old', '1', '" + serialize(*event) + "')");
  }
  {
    auto store = open(Access::write);
    ASSERT_TRUE(store);
  }
  EXPECT_EQ(sql("SELECT max(version) FROM fingerprint_schema"), std::to_string(k_schema_version));
  EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_events"), "2");
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  auto log = store->read_log(a);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->events, (std::vector<Event>{made_a, use}));
  const auto manifest = manifest_of({{Role::link, a.hex, 4096, "/build/old/a"}});
  ASSERT_TRUE(store->put_manifest(manifest.key, manifest.encoded, manifest.manifest));
  const auto made_c = produced_from(key_of('c'), manifest, "new", "1");
  ASSERT_TRUE(store->append_call(std::string(32, 'c'), {made_c}));
  std::vector<LogProblem> problems;
  auto consumers = store->find_consumers(a, false, problems);
  ASSERT_TRUE(consumers) << consumers.error().message;
  EXPECT_EQ(hits_of(*consumers),
            (std::vector<std::pair<Event, int>>{
              {use, 1}, {read_by(a, key_of('c'), "new", "1", 4096, "/build/old/a", "link"), 1}}));
  auto report = store->fsck({});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->findings.empty()) << report->findings.front().problem;
  EXPECT_EQ(report->manifests, 1u);
}

// fsck: a produced event naming a manifest the database lacks, a manifest
// whose bytes do not decode, one whose bytes hash to another name, one
// whose entries disagree with its bytes. Nothing is changed by a look.
TEST_F(PostgresStoreOnly, FsckFindsMissingUnreadableMisnamedAndInconsistentManifests)
{
  const auto store = open(Access::write);
  ASSERT_TRUE(store);
  const auto good = manifest_of({{Role::link, key_of('1').hex, 1, "/l/one"}});
  const auto garbled = manifest_of({{Role::link, key_of('2').hex, 2, "/l/two"}});
  const auto misnamed = manifest_of({{Role::link, key_of('3').hex, 3, "/l/three"}});
  const auto drifted = manifest_of({{Role::link, key_of('4').hex, 4, "/l/four"}});
  const auto missing = manifest_of({{Role::link, key_of('5').hex, 5, "/l/five"}});
  for (const auto* manifest : {&good, &garbled, &misnamed, &drifted}) {
    ASSERT_TRUE(store->put_manifest(manifest->key, manifest->encoded, manifest->manifest));
  }
  ASSERT_TRUE(store->append_call(std::string(32, 'a'), {produced_from(key_of('a'), good, "p", "1")}));
  ASSERT_TRUE(store->append_call(std::string(32, 'b'), {produced_from(key_of('b'), missing, "p", "1")}));
  auto clean = store->fsck({});
  ASSERT_TRUE(clean) << clean.error().message;
  ASSERT_EQ(clean->findings.size(), 1u);
  EXPECT_EQ(clean->findings[0].file, "fingerprint_events");
  EXPECT_NE(clean->findings[0].problem.find(missing.key.str()), std::string::npos) << clean->findings[0].problem;

  sql("UPDATE fingerprint_manifests SET bytes = 'not a manifest'::bytea WHERE digest = '" + garbled.key.str() + "'");
  sql("UPDATE fingerprint_manifests SET bytes = (SELECT bytes FROM fingerprint_manifests WHERE digest = '"
      + good.key.str() + "') WHERE digest = '" + misnamed.key.str() + "'");
  sql("UPDATE fingerprint_manifest_entries SET size = 40 WHERE input = '" + key_of('4').str() + "'");
  const std::string before = *sql("SELECT md5(string_agg(digest || encode(bytes, 'hex'), ',' ORDER BY id)) FROM "
                                  "fingerprint_manifests");
  auto report = store->fsck({});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->manifests, 4u);
  std::vector<std::pair<std::string, std::string>> found;
  for (const auto& finding : report->findings) {
    found.emplace_back(finding.file, finding.problem);
  }
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].first, "fingerprint_manifests");
  EXPECT_NE(found[0].second.find(garbled.key.str() + ": its bytes: not an input manifest"), std::string::npos)
    << found[0].second;
  EXPECT_NE(found[1].second.find(misnamed.key.str() + ": its bytes hash to " + good.key.str()), std::string::npos)
    << found[1].second;
  EXPECT_NE(found[2].second.find(drifted.key.str() + ": its rows of fingerprint_manifest_entries disagree"),
            std::string::npos)
    << found[2].second;
  EXPECT_EQ(found[3].first, "fingerprint_events");
  EXPECT_NE(found[3].second.find(missing.key.str()), std::string::npos) << found[3].second;
  EXPECT_EQ(sql("SELECT md5(string_agg(digest || encode(bytes, 'hex'), ',' ORDER BY id)) FROM fingerprint_manifests"),
            before);
}

// migrate copies manifests too, before the events that name them; a second
// run copies nothing; a user line that only the manifest's log kept (its
// product's copy lost) is copied into its product's log; and the database
// answers consumers as the directory does.
TEST_F(PostgresStoreOnly, ImportCopiesManifestsOnceAndTheDatabaseAnswersAsTheDirectoryDoes)
{
  test::TempDir dir;
  const std::string root = dir / "store";
  const auto lib = key_of('1'), app = key_of('3'), tool = key_of('6');
  const auto m1 =
    manifest_of({{Role::link, lib.hex, 100, "/usr/lib/libz.a"}, {Role::compile, key_of('2').hex, 11, "/inc/h.h"}});
  const auto made_app = produced_from(app, m1, "app", "2");
  const auto made_tool = produced_from(tool, m1, "tool", "1");
  {
    auto source = open_store(root, Access::write);
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_TRUE((*source)->put_manifest(m1.key, m1.encoded, m1.manifest));
    ASSERT_TRUE((*source)->append_call({}, {made_app}));
    ASSERT_TRUE((*source)->append_call({}, {made_tool}));
  }
  // The tool's line lost from its own log: only the manifest's log has it.
  test::write_file(root + "/" + tool.log_path(), "");
  auto source = DirectoryStore::open_for_reading(root);
  ASSERT_TRUE(source) << source.error().message;
  std::vector<LogProblem> problems;
  auto from_directory = source->find_consumers(lib, true, problems);
  ASSERT_TRUE(from_directory) << from_directory.error().message;
  ASSERT_EQ(from_directory->size(), 2u);

  auto target = PostgresStore::open(m_location, Access::write);
  ASSERT_TRUE(target) << target.error().message;
  auto first = migrate(*source, **target, {});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->manifests_copied, 1u);
  EXPECT_EQ(first->manifests_present, 0u);
  EXPECT_EQ(first->events_copied, 2u) << "each produced event once, in its product's log";
  EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_events"), "2");
  EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_manifest_entries"), "2");
  auto tool_log = (*target)->read_log(tool);
  ASSERT_TRUE(tool_log) << tool_log.error().message;
  EXPECT_EQ(tool_log->events, (std::vector<Event>{made_tool}));
  auto from_database = (*target)->find_consumers(lib, true, problems);
  ASSERT_TRUE(from_database) << from_database.error().message;
  EXPECT_EQ(hits_of(*from_database), hits_of(*from_directory));
  EXPECT_EQ(hits_of(*from_database),
            (std::vector<std::pair<Event, int>>{{read_by(lib, app, "app", "2", 100, "/usr/lib/libz.a", "link"), 1},
                                                {read_by(lib, tool, "tool", "1", 100, "/usr/lib/libz.a", "link"), 1}}));
  EXPECT_TRUE(problems.empty()) << problems.front().message;

  auto second = migrate(*source, **target, {});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->manifests_copied, 0u);
  EXPECT_EQ(second->manifests_present, 1u);
  EXPECT_EQ(second->events_copied, 0u);
  EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_manifests"), "1");
  EXPECT_EQ(sql("SELECT count(*) FROM fingerprint_events"), "2");

  // A manifest whose bytes are not what its name says: nothing is copied.
  test::write_file(root + "/" + layout::manifest_file(m1.key), "garbage");
  auto refused = migrate(*source, **target, {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(m1.key.hex), std::string::npos) << refused.error().message;
}

TEST(PostgresStoreUrl, APasswordIsMaskedInLocationsAndErrors)
{
  EXPECT_EQ(PostgresStore::mask_password("postgresql://fp:s3cret@db.example:5432/fp"),
            "postgresql://fp:***@db.example:5432/fp");
  EXPECT_EQ(PostgresStore::mask_password("postgresql://fp@db.example/fp"), "postgresql://fp@db.example/fp");
  EXPECT_EQ(PostgresStore::mask_password("postgresql://db.example/fp?sslmode=require&password=s3cret").find("s3cret"),
            std::string::npos);
  // Nothing listens on port 1: the connection is refused at once.
  enable_postgresql();
  auto store = open_store("postgresql://fp:s3cret@127.0.0.1:1/fp", Access::read);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().message.find("s3cret"), std::string::npos) << store.error().message;
}

} // namespace
} // namespace fingerprint::store
