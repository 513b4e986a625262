#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <libpq-fe.h>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

namespace fingerprint::store {

struct PostgresStore::Connection
{
  PGconn* conn = nullptr;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection()
  {
    if (conn != nullptr) {
      PQfinish(conn);
    }
  }
};

namespace {

// Each schema version is the SQL that takes a database from the version
// before it; k_migrations[0] creates version 1 from nothing. A new version
// appends a step here and raises k_schema_version; no step ever changes.
constexpr const char* k_migrations[] = {
  // 1: events, one row per event and log.
  R"sql(
CREATE TABLE fingerprint_schema (version integer NOT NULL);
INSERT INTO fingerprint_schema VALUES (0);
CREATE TABLE fingerprint_events (
  id bigserial PRIMARY KEY,
  log text COLLATE "C" NOT NULL, -- the artifact whose log holds the event: "sha256:<hex>"
  logged boolean NOT NULL,    -- in that log (gc removes from logs first, indexes last)
  indexed boolean NOT NULL,   -- in its build's index (never for an installed copy's link)
  kind text NOT NULL,         -- produced | consumed | installed
  digest text NOT NULL,       -- the event's artifact
  product text NOT NULL,      -- consumed: what the consumer produced; else ''
  from_digest text NOT NULL,  -- installed: the build-tree artifact it was installed from; else ''
  project text COLLATE "C" NOT NULL, -- byte order, as the directory store sorts builds
  build text COLLATE "C" NOT NULL,
  line text NOT NULL          -- the event as the directory store writes it
);
-- Who produced or consumed an artifact (the reverse query): one range of this index.
CREATE INDEX fingerprint_events_by_log ON fingerprint_events (log, id) WHERE logged;
-- What one build (the consumer) recorded, and every build in order: builds,
-- build show, export, gc, verify, graph.
CREATE INDEX fingerprint_events_by_build ON fingerprint_events (project, build, id) WHERE indexed;
-- Rows fsck --repair set aside: never deleted.
CREATE TABLE fingerprint_quarantine (
  id bigint NOT NULL,
  log text NOT NULL,
  line text NOT NULL,
  problem text NOT NULL,
  moved timestamptz NOT NULL DEFAULT now()
);
)sql",
};
static_assert(std::size(k_migrations) == k_schema_version);

// Any number, the same in every runner: serializes creating and migrating
// the schema, and concurrent imports.
constexpr const char* k_schema_lock = "SELECT pg_advisory_xact_lock(7046529851223360001)";
constexpr const char* k_import_lock = "SELECT pg_advisory_xact_lock(7046529851223360002)";

constexpr const char* k_undefined_table = "42P01";

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

// libpq's messages end in a newline and may span lines.
std::string
one_line(std::string text)
{
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at)) {
    const size_t end = text.find_first_not_of(" \t\n", at);
    text.replace(at, (end == std::string::npos ? text.size() : end) - at, "; ");
  }
  return text;
}

// "{\"a\",\"b\"}": a text[] parameter (one round trip for a whole batch).
std::string
text_array(const std::vector<std::string>& values)
{
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i == 0 ? "\"" : ",\"";
    for (char c : values[i]) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::string
bool_array(const std::vector<bool>& values)
{
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i == 0 ? "" : ",";
    out += values[i] ? 't' : 'f';
  }
  out += '}';
  return out;
}

// The columns of one row to insert.
struct Rows
{
  std::vector<std::string> log, kind, digest, product, from, project, build, line;
  std::vector<bool> indexed;

  // `event` as it reads back from `text` (so a name that is not UTF-8 is
  // stored as the line has it, with U+FFFD).
  void
  add(const std::string& log_key, const Event& event, std::string text)
  {
    log.push_back(log_key);
    indexed.push_back(event.digest == log_key);
    kind.emplace_back(event_kind_name(event.event));
    digest.push_back(event.digest);
    product.push_back(event.product);
    from.push_back(event.from);
    project.push_back(event.project);
    build.push_back(event.build);
    line.push_back(std::move(text));
  }
  bool
  empty() const
  {
    return log.empty();
  }
};

constexpr const char* k_insert = R"sql(
INSERT INTO fingerprint_events (log, logged, indexed, kind, digest, product, from_digest, project, build, line)
SELECT log, true, indexed, kind, digest, product, from_digest, project, build, line
FROM unnest($1::text[], $2::boolean[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::text[]) AS r(log, indexed, kind, digest, product, from_digest, project, build, line))sql";

// The line of a new event and the event as it reads back from it; the
// database's text columns take no NUL byte.
Expected<std::pair<std::string, Event>>
row_for(const Event& event)
{
  auto line = serialize_for_storing(event);
  if (!line) {
    return line.error();
  }
  auto stored = parse_event(*line);
  if (!stored) {
    return stored.error();
  }
  for (const std::string* text : {&stored->project, &stored->build, &stored->path, &stored->build_dir}) {
    if (text->find('\0') != std::string::npos) {
      return Error{"event for " + event.digest + ": a NUL byte in a name cannot be stored in PostgreSQL"};
    }
  }
  return std::pair{std::move(*line), std::move(*stored)};
}

// The events of some logs, parsed as the directory store parses its lines.
void
parse_row(const char* id, const char* line, LogContents& into)
{
  auto event = parse_event(line);
  if (!event) {
    into.problems.push_back({"fingerprint_events", std::stoul(id), event.error().message});
    return;
  }
  into.events.push_back(std::move(*event));
}

// One statement at a time through libpq, each error naming the store.
class Session
{
public:
  Session(PGconn* conn, const std::string& location)
    : m_conn(conn)
    , m_location(location)
  {
  }

  // Runs `sql` with text parameters; `what` says what for in errors.
  Expected<Result>
  run(std::string_view what, const char* sql, const std::vector<std::string>& params = {}) const
  {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& param : params) {
      values.push_back(param.c_str());
    }
    // Without parameters, the simple protocol: it takes several statements
    // (the schema's migrations).
    Result result(
      values.empty()
        ? PQexec(m_conn, sql)
        : PQexecParams(m_conn, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0),
      &PQclear);
    const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
      return result;
    }
    const char* state = result ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
    m_last_state = state != nullptr ? state : "";
    return Error{m_location + ": " + std::string(what) + ": "
                 + one_line(result ? PQresultErrorMessage(result.get()) : PQerrorMessage(m_conn))};
  }

  const std::string&
  location() const
  {
    return m_location;
  }

  // The SQLSTATE of the last failure ("42P01": no such table).
  const std::string&
  last_state() const
  {
    return m_last_state;
  }

  // Runs `body` in one transaction: committed when it succeeds, rolled back
  // when it fails.
  template <typename Body>
  auto
  transaction(std::string_view what, Body&& body) const -> decltype(body())
  {
    if (auto begun = run(what, "BEGIN"); !begun) {
      return begun.error();
    }
    auto outcome = body();
    if (!outcome) {
      (void)run(what, "ROLLBACK");
      return outcome;
    }
    if (auto committed = run(what, "COMMIT"); !committed) {
      return committed.error();
    }
    return outcome;
  }

  Expected<void>
  insert(std::string_view what, const Rows& rows) const
  {
    if (rows.empty()) {
      return {};
    }
    auto inserted = run(what,
                        k_insert,
                        {text_array(rows.log),
                         bool_array(rows.indexed),
                         text_array(rows.kind),
                         text_array(rows.digest),
                         text_array(rows.product),
                         text_array(rows.from),
                         text_array(rows.project),
                         text_array(rows.build),
                         text_array(rows.line)});
    if (!inserted) {
      return inserted.error();
    }
    return {};
  }

private:
  PGconn* m_conn;
  const std::string& m_location;
  mutable std::string m_last_state;
};

// Creates or migrates the schema; false when reading a database without one.
Expected<bool>
ensure_schema(const Session& session, Access access)
{
  auto version_of = [&]() -> Expected<int> {
    auto result = session.run("reading the schema version", "SELECT max(version) FROM fingerprint_schema");
    if (!result) {
      if (session.last_state() == k_undefined_table) {
        return 0;
      }
      return result.error();
    }
    return PQgetisnull(result->get(), 0, 0) != 0 ? 0 : std::atoi(PQgetvalue(result->get(), 0, 0));
  };
  auto version = version_of();
  if (!version) {
    return version.error();
  }
  if (*version > k_schema_version) {
    return Error{session.location() + ": the store's schema is version " + std::to_string(*version)
                 + ", newer than this fingerprint understands (" + std::to_string(k_schema_version)
                 + "); upgrade fingerprint"};
  }
  if (*version == k_schema_version) {
    return true;
  }
  if (*version == 0 && access == Access::read) {
    return false;
  }
  auto migrated = session.transaction("creating the schema", [&]() -> Expected<bool> {
    if (auto locked = session.run("creating the schema", k_schema_lock); !locked) {
      return locked.error();
    }
    // Another runner may have done it while this one waited for the lock.
    auto exists = session.run("creating the schema", "SELECT to_regclass('fingerprint_schema') IS NOT NULL");
    if (!exists) {
      return exists.error();
    }
    int at = 0;
    if (std::string_view(PQgetvalue(exists->get(), 0, 0)) == "t") {
      auto now = version_of();
      if (!now) {
        return now.error();
      }
      at = *now;
    }
    for (int step = at; step < k_schema_version; ++step) {
      if (auto done = session.run("migrating the schema to version " + std::to_string(step + 1), k_migrations[step]);
          !done) {
        return done.error();
      }
    }
    if (at < k_schema_version) {
      if (auto set = session.run(
            "migrating the schema", "UPDATE fingerprint_schema SET version = $1", {std::to_string(k_schema_version)});
          !set) {
        return set.error();
      }
    }
    return true;
  });
  return migrated;
}

} // namespace

void
enable_postgresql()
{
  set_database_opener([](const std::string& url, Access access) -> Expected<std::unique_ptr<Store>> {
    auto store = PostgresStore::open(url, access);
    if (!store) {
      return store.error();
    }
    return std::unique_ptr<Store>(std::move(*store));
  });
}

std::string
PostgresStore::mask_password(std::string_view url)
{
  std::string out(url);
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = std::min(out.find_first_of("/?", start), out.size());
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  // password=... among the parameters.
  for (size_t at = out.find("password="); at != std::string::npos; at = out.find("password=", at + 1)) {
    const size_t begin = at + 9;
    const size_t end = std::min(out.find('&', begin), out.size());
    out.replace(begin, end - begin, "***");
  }
  return out;
}

PostgresStore::PostgresStore(std::string location, std::unique_ptr<Connection> connection, bool has_schema)
  : m_location(std::move(location))
  , m_connection(std::move(connection))
  , m_has_schema(has_schema)
{
}

PostgresStore::~PostgresStore() = default;

Expected<std::unique_ptr<PostgresStore>>
PostgresStore::open(const std::string& url, Access access)
{
  std::string location = mask_password(url);
  // Defaults first: what the URL says wins (expand_dbname expands it in
  // place). A hook must not hang a build: 5 s to connect, 10 s to wait for
  // a lock (a VACUUM FULL, say), 60 s for any statement. No NOTICEs (the
  // schema's creation would print some).
  const char* keywords[] = {"connect_timeout", "options", "application_name", "client_encoding", "dbname", nullptr};
  const char* values[] = {"5",
                          "-c lock_timeout=10s -c statement_timeout=60s -c client_min_messages=warning",
                          "fingerprint",
                          "UTF8",
                          url.c_str(),
                          nullptr};
  auto connection = std::make_unique<Connection>();
  connection->conn = PQconnectdbParams(keywords, values, 1);
  if (connection->conn == nullptr) {
    return Error{location + ": cannot connect: out of memory"};
  }
  if (PQstatus(connection->conn) != CONNECTION_OK) {
    return Error{location + ": cannot connect: " + one_line(PQerrorMessage(connection->conn))};
  }
  Session session(connection->conn, location);
  auto has_schema = ensure_schema(session, access);
  if (!has_schema) {
    return has_schema.error();
  }
  return std::unique_ptr<PostgresStore>(new PostgresStore(std::move(location), std::move(connection), *has_schema));
}

const std::string&
PostgresStore::location() const
{
  return m_location;
}

Expected<void>
PostgresStore::append(const std::vector<Event>& events, Warnings*) const
{
  if (!m_has_schema) {
    return Error{m_location + ": store not opened for writing"};
  }
  Rows rows;
  for (const Event& event : events) {
    auto row = row_for(event);
    if (!row) {
      return Error{m_location + ": " + row.error().message + "; nothing was recorded"};
    }
    rows.add(row->second.digest, row->second, std::move(row->first));
  }
  // One statement: every event of the call lands, or none does.
  return Session(m_connection->conn, m_location).insert("recording", rows);
}

Expected<void>
PostgresStore::append_link(const DigestKey& log, const Event& event, Warnings*) const
{
  if (!m_has_schema) {
    return Error{m_location + ": store not opened for writing"};
  }
  auto row = row_for(event);
  if (!row) {
    return Error{m_location + ": " + row.error().message + "; nothing was recorded"};
  }
  Rows rows;
  rows.add(log.str(), row->second, std::move(row->first));
  return Session(m_connection->conn, m_location).insert("recording", rows);
}

Expected<LogContents>
PostgresStore::read_log(const DigestKey& key) const
{
  LogContents contents;
  if (!m_has_schema) {
    return contents;
  }
  auto result = Session(m_connection->conn, m_location)
                  .run("reading the log of " + key.str(),
                       "SELECT id, line FROM fingerprint_events WHERE log = $1 AND logged ORDER BY id",
                       {key.str()});
  if (!result) {
    return result.error();
  }
  for (int row = 0; row < PQntuples(result->get()); ++row) {
    parse_row(PQgetvalue(result->get(), row, 0), PQgetvalue(result->get(), row, 1), contents);
  }
  return contents;
}

Expected<std::string>
PostgresStore::read_raw_log(const DigestKey& key) const
{
  std::string text;
  if (!m_has_schema) {
    return text;
  }
  auto result = Session(m_connection->conn, m_location)
                  .run("reading the log of " + key.str(),
                       "SELECT line FROM fingerprint_events WHERE log = $1 AND logged ORDER BY id",
                       {key.str()});
  if (!result) {
    return result.error();
  }
  for (int row = 0; row < PQntuples(result->get()); ++row) {
    text += PQgetvalue(result->get(), row, 0);
    text += '\n';
  }
  return text;
}

Expected<std::vector<BuildRef>>
PostgresStore::list_builds() const
{
  std::vector<BuildRef> builds;
  if (!m_has_schema) {
    return builds;
  }
  auto result = Session(m_connection->conn, m_location)
                  .run("listing the builds", "SELECT DISTINCT project, build FROM fingerprint_events WHERE indexed");
  if (!result) {
    return result.error();
  }
  for (int row = 0; row < PQntuples(result->get()); ++row) {
    builds.push_back({PQgetvalue(result->get(), row, 0), PQgetvalue(result->get(), row, 1)});
  }
  // Byte order, as the directory store sorts (not the database's collation).
  std::sort(builds.begin(), builds.end(), [](const BuildRef& a, const BuildRef& b) {
    return std::tie(a.project, a.build) < std::tie(b.project, b.build);
  });
  return builds;
}

Expected<LogContents>
PostgresStore::read_build(const BuildRef& build) const
{
  LogContents contents;
  if (!m_has_schema) {
    return contents;
  }
  auto result =
    Session(m_connection->conn, m_location)
      .run("reading build " + build.build + " of " + build.project,
           "SELECT id, line FROM fingerprint_events WHERE indexed AND project = $1 AND build = $2 ORDER BY id",
           {build.project, build.build});
  if (!result) {
    return result.error();
  }
  for (int row = 0; row < PQntuples(result->get()); ++row) {
    parse_row(PQgetvalue(result->get(), row, 0), PQgetvalue(result->get(), row, 1), contents);
  }
  return contents;
}

Expected<void>
PostgresStore::for_each_build(const std::string& project, const BuildVisitor& each) const
{
  if (!m_has_schema) {
    return {};
  }
  // Sorted here, not by the server: a sort of whole rows spills to disk
  // at the default work_mem (54 ms for 9,200 rows), sorting row numbers
  // takes 2 ms. Builds in byte order, as list_builds sorts them.
  auto result =
    Session(m_connection->conn, m_location)
      .run("reading the build index",
           "SELECT project, build, id, line FROM fingerprint_events WHERE indexed AND ($1 = '' OR project = $1)",
           {project});
  if (!result) {
    return result.error();
  }
  PGresult* rows = result->get();
  std::vector<std::tuple<std::string_view, std::string_view, int64_t, int>> order;
  order.reserve(static_cast<size_t>(PQntuples(rows)));
  for (int row = 0; row < PQntuples(rows); ++row) {
    order.emplace_back(PQgetvalue(rows, row, 0), PQgetvalue(rows, row, 1), std::atoll(PQgetvalue(rows, row, 2)), row);
  }
  std::sort(order.begin(), order.end());
  for (size_t first = 0; first < order.size();) {
    const auto& [build_project, build_id, id, row] = order[first];
    const BuildRef build{std::string(build_project), std::string(build_id)};
    LogContents contents;
    size_t at = first;
    for (; at < order.size() && std::get<0>(order[at]) == build_project && std::get<1>(order[at]) == build_id; ++at) {
      const int each_row = std::get<3>(order[at]);
      parse_row(PQgetvalue(rows, each_row, 2), PQgetvalue(rows, each_row, 3), contents);
    }
    each(build, contents);
    first = at;
  }
  return {};
}

namespace {

// Selects rows under FOR UPDATE and takes those `drop` selects out of the
// log or index (`leave`), in one transaction. A row is in its log and in its
// build's index, as a directory store's line is in both files: gc removes
// it from the log first and from the index last, as it does files.
Expected<CompactionResult>
remove_rows(const Session& session,
            const std::string& what,
            const char* select,
            const char* leave,
            const std::vector<std::string>& params,
            const Store::EventFilter& drop,
            bool dry_run)
{
  return session.transaction(what, [&]() -> Expected<CompactionResult> {
    auto result = session.run(what, select, params);
    if (!result) {
      return result.error();
    }
    CompactionResult outcome;
    std::vector<std::string> ids;
    for (int row = 0; row < PQntuples(result->get()); ++row) {
      LogContents one;
      parse_row(PQgetvalue(result->get(), row, 0), PQgetvalue(result->get(), row, 1), one);
      if (!one.problems.empty()) {
        return Error{what + ": row " + std::to_string(one.problems.front().line) + " of fingerprint_events: "
                     + one.problems.front().message + "; it is left as it is (run: fingerprint fsck --repair)"};
      }
      ++outcome.events_before;
      if (drop(one.events.front())) {
        ids.emplace_back(PQgetvalue(result->get(), row, 0));
      }
    }
    if (outcome.events_before == 0) {
      return Error{what + ": no such log"};
    }
    outcome.events_after = outcome.events_before - ids.size();
    outcome.removed = outcome.events_after == 0;
    if (!dry_run && !ids.empty()) {
      // Out of this log or index; a row in neither holds nothing any more.
      if (auto left = session.run(what, leave, {text_array(ids)}); !left) {
        return left.error();
      }
      if (auto gone =
            session.run(what,
                        "DELETE FROM fingerprint_events WHERE id = ANY($1::bigint[]) AND NOT logged AND NOT indexed",
                        {text_array(ids)});
          !gone) {
        return gone.error();
      }
    }
    return outcome;
  });
}

} // namespace

Expected<CompactionResult>
PostgresStore::remove_events(const DigestKey& key, const EventFilter& drop, bool dry_run) const
{
  if (!m_has_schema) {
    return Error{m_location + ": the log of " + key.str() + ": no such log"};
  }
  return remove_rows(Session(m_connection->conn, m_location),
                     m_location + ": the log of " + key.str(),
                     "SELECT id, line FROM fingerprint_events WHERE log = $1 AND logged ORDER BY id FOR UPDATE",
                     "UPDATE fingerprint_events SET logged = false WHERE id = ANY($1::bigint[])",
                     {key.str()},
                     drop,
                     dry_run);
}

Expected<CompactionResult>
PostgresStore::remove_build_events(const BuildRef& build, const EventFilter& drop, bool dry_run) const
{
  if (!m_has_schema) {
    return Error{m_location + ": build " + build.build + " of " + build.project + ": no such log"};
  }
  return remove_rows(Session(m_connection->conn, m_location),
                     m_location + ": build " + build.build + " of " + build.project,
                     "SELECT id, line FROM fingerprint_events WHERE indexed AND project = $1 AND build = $2 "
                     "ORDER BY id FOR UPDATE",
                     "UPDATE fingerprint_events SET indexed = false WHERE id = ANY($1::bigint[])",
                     {build.project, build.build},
                     drop,
                     dry_run);
}

Expected<FsckReport>
PostgresStore::fsck(const FsckOptions& options) const
{
  FsckReport report;
  if (!m_has_schema) {
    return report;
  }
  const Session session(m_connection->conn, m_location);
  auto result = session.run(
    "checking the events",
    "SELECT id, log, indexed, kind, digest, product, from_digest, project, build, line, logged FROM fingerprint_events "
    "ORDER BY id");
  if (!result) {
    return result.error();
  }
  const int rows = PQntuples(result->get());
  std::set<std::string> logs;
  std::set<std::pair<std::string, std::string>> indexes;
  std::vector<std::string> bad_ids;
  std::vector<std::string> bad_problems;
  for (int row = 0; row < rows; ++row) {
    auto cell = [&](int column) { return std::string(PQgetvalue(result->get(), row, column)); };
    const std::string id = cell(0);
    const bool indexed = cell(2) == "t";
    std::string problem;
    auto event = parse_event(cell(9));
    if (!event) {
      problem = event.error().message;
    } else if (cell(3) != event_kind_name(event->event) || cell(4) != event->digest || cell(5) != event->product
               || cell(6) != event->from || cell(7) != event->project || cell(8) != event->build) {
      problem = "the row's columns disagree with its event";
    } else if (cell(1) != event->digest && !(event->event == EventKind::installed && event->from == cell(1))) {
      problem = "event for " + event->digest + " in the log of " + cell(1);
    } else if (indexed && cell(1) != event->digest) {
      problem = "a link row marked as in its build's index";
    }
    if (!problem.empty()) {
      FsckFinding finding{"fingerprint_events", std::stoul(id), problem, FsckKind::damage, {}};
      if (options.repair) {
        finding.repair = "moved to fingerprint_quarantine";
      }
      report.findings.push_back(std::move(finding));
      bad_ids.push_back(id);
      bad_problems.push_back(problem);
      continue;
    }
    if (cell(10) == "t") {
      logs.insert(cell(1));
      report.events += 1;
    }
    if (indexed) {
      indexes.emplace(cell(7), cell(8));
      report.events += 1;
    }
    if (options.progress && (row + 1) % 1000 == 0) {
      options.progress(static_cast<size_t>(row + 1), static_cast<size_t>(rows));
    }
  }
  report.logs = logs.size();
  report.build_indexes = indexes.size();
  if (options.repair && !bad_ids.empty()) {
    auto moved = session.transaction("setting damaged rows aside", [&]() -> Expected<void> {
      auto copied = session.run("setting damaged rows aside",
                                "INSERT INTO fingerprint_quarantine (id, log, line, problem) "
                                "SELECT e.id, e.log, e.line, p.problem FROM fingerprint_events e "
                                "JOIN unnest($1::bigint[], $2::text[]) AS p(id, problem) ON e.id = p.id",
                                {text_array(bad_ids), text_array(bad_problems)});
      if (!copied) {
        return copied.error();
      }
      auto removed = session.run("setting damaged rows aside",
                                 "DELETE FROM fingerprint_events WHERE id = ANY($1::bigint[])",
                                 {text_array(bad_ids)});
      if (!removed) {
        return removed.error();
      }
      return {};
    });
    if (!moved) {
      return moved.error();
    }
    report.repaired = bad_ids.size();
    report.quarantine = "fingerprint_quarantine";
  }
  if (options.progress) {
    options.progress(static_cast<size_t>(rows), static_cast<size_t>(rows));
  }
  return report;
}

namespace {

// Every log reachable from `start` through installed copies and (when
// `follow_consumers`) consumers' products, in one recursive query: the
// walks then read from memory, in the same order as on the directory store.
Expected<std::map<std::string, LogContents>>
reachable_logs(const Session& session, const DigestKey& start, bool follow_consumers)
{
  auto result = session.run("following consumers of " + start.str(),
                            R"sql(
WITH RECURSIVE reach(log) AS (
    SELECT $1::text
  UNION
    SELECT CASE WHEN e.kind = 'consumed' THEN e.product ELSE e.digest END
    FROM fingerprint_events e JOIN reach r ON e.log = r.log AND e.logged
    WHERE (e.kind = 'consumed' AND $2::boolean)
       OR (e.kind = 'installed' AND e.digest <> e.log AND e.from_digest = e.log)
)
SELECT e.log, e.id, e.line FROM fingerprint_events e JOIN reach r ON e.log = r.log AND e.logged
ORDER BY e.log, e.id)sql",
                            {start.str(), follow_consumers ? "true" : "false"});
  if (!result) {
    return result.error();
  }
  std::map<std::string, LogContents> logs;
  for (int row = 0; row < PQntuples(result->get()); ++row) {
    parse_row(
      PQgetvalue(result->get(), row, 1), PQgetvalue(result->get(), row, 2), logs[PQgetvalue(result->get(), row, 0)]);
  }
  return logs;
}

RecordLoader
loader_of(const std::map<std::string, LogContents>& logs)
{
  return [&logs](const DigestKey& key) -> Expected<ArtifactRecord> {
    auto found = logs.find(key.str());
    return fold_record(key, found == logs.end() ? LogContents{} : found->second);
  };
}

} // namespace

Expected<std::vector<ConsumerHit>>
PostgresStore::find_consumers(const DigestKey& key, bool transitive, std::vector<LogProblem>& problems) const
{
  if (!m_has_schema) {
    return std::vector<ConsumerHit>{};
  }
  auto logs = reachable_logs(Session(m_connection->conn, m_location), key, transitive);
  if (!logs) {
    return logs.error();
  }
  return walk_consumers(loader_of(*logs), key, transitive, problems);
}

Expected<std::vector<Event>>
PostgresStore::find_chain(const DigestKey& from, const DigestKey& to, std::vector<LogProblem>& problems) const
{
  if (!m_has_schema) {
    return std::vector<Event>{};
  }
  auto logs = reachable_logs(Session(m_connection->conn, m_location), from, true);
  if (!logs) {
    return logs.error();
  }
  return walk_chain(loader_of(*logs), from, to, problems);
}

namespace {

// Each build index's events as lines, in its order.
Expected<std::vector<std::vector<std::string>>>
build_index_lines(const DirectoryStore& source)
{
  std::vector<std::vector<std::string>> indexes;
  auto builds = source.list_builds();
  if (!builds) {
    return builds.error();
  }
  for (const auto& build : *builds) {
    auto index = source.read_build(build);
    if (!index) {
      return index.error();
    }
    auto& lines = indexes.emplace_back();
    for (const Event& event : index->events) {
      lines.push_back(serialize(event));
    }
  }
  return indexes;
}

// An order of `count` rows that keeps every chain in `chains` (each a
// sequence of rows that must stay in that order: a log, a build index),
// earliest `time` first among the rows free to go. A directory store's logs
// and indexes were appended in one order, so one exists; were they edited
// out of step, the earliest row waiting goes first and the rest follow.
std::vector<size_t>
merge_orders(const std::vector<std::string>& time, const std::vector<std::vector<size_t>>& chains)
{
  const size_t count = time.size();
  std::vector<std::vector<size_t>> next(count);
  std::vector<size_t> waiting(count, 0);
  for (const auto& chain : chains) {
    for (size_t i = 1; i < chain.size(); ++i) {
      next[chain[i - 1]].push_back(chain[i]);
      ++waiting[chain[i]];
    }
  }
  using Entry = std::pair<std::string_view, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  std::set<Entry> blocked; // only used when the chains disagree
  for (size_t row = 0; row < count; ++row) {
    (waiting[row] == 0 ? static_cast<void>(ready.emplace(time[row], row))
                       : static_cast<void>(blocked.emplace(time[row], row)));
  }
  std::vector<size_t> order;
  std::vector<bool> placed(count, false);
  while (order.size() < count) {
    if (ready.empty()) {
      const Entry first = *blocked.begin(); // a cycle: break it
      blocked.erase(blocked.begin());
      waiting[first.second] = 0;
      ready.push(first);
    }
    const size_t row = ready.top().second;
    ready.pop();
    if (placed[row]) {
      continue;
    }
    placed[row] = true;
    order.push_back(row);
    for (size_t after : next[row]) {
      if (!placed[after] && waiting[after] > 0 && --waiting[after] == 0) {
        blocked.erase({time[after], after});
        ready.emplace(time[after], after);
      }
    }
  }
  return order;
}

} // namespace

Expected<MigrateReport>
PostgresStore::import_from(const DirectoryStore& source, const std::function<void(size_t, size_t)>& progress) const
{
  MigrateReport report;
  auto keys = source.list_logs();
  if (!keys) {
    return keys.error();
  }
  // Everything is read, and must read cleanly, before anything is written.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, Event>>>> logs;
  std::vector<std::string> unreadable;
  size_t problems = 0;
  for (size_t i = 0; i < keys->size(); ++i) {
    auto contents = source.read_log((*keys)[i]);
    if (!contents) {
      return contents.error();
    }
    for (const auto& problem : contents->problems) {
      if (++problems <= 5) {
        unreadable.push_back(source.root() + "/" + problem.file + ":" + std::to_string(problem.line) + ": "
                             + problem.message);
      }
    }
    report.events_read += contents->events.size();
    auto& rows = logs.emplace_back((*keys)[i].str(), std::vector<std::pair<std::string, Event>>{}).second;
    for (const Event& event : contents->events) {
      auto row = row_for(event);
      if (!row) {
        return Error{source.root() + "/" + (*keys)[i].log_path() + ": " + row.error().message + ": nothing was copied"};
      }
      rows.push_back(std::move(*row));
    }
    if (progress) {
      progress(i + 1, keys->size() * 2);
    }
  }
  report.logs = logs.size();
  if (problems > 0) {
    std::string message;
    for (const auto& line : unreadable) {
      message += line + "\n";
    }
    return Error{message + std::to_string(problems) + " unreadable line" + (problems == 1 ? "" : "s") + " in "
                 + source.root() + ": nothing was copied (run: fingerprint --store " + source.root()
                 + " fsck --repair, then migrate again)"};
  }
  // Rows keep the order they were recorded in, in their logs and in their
  // builds' indexes alike (the queries answer in those orders).
  auto indexes = build_index_lines(source);
  if (!indexes) {
    return indexes.error();
  }
  struct Pending
  {
    std::string log;
    Event event;
    std::string line;
  };
  std::vector<Pending> pending;
  const Session session(m_connection->conn, m_location);
  constexpr size_t k_logs_per_query = 500;
  constexpr size_t k_rows_per_insert = 2000;
  auto copied = session.transaction("copying events", [&]() -> Expected<void> {
    // One transaction: a migrate lands whole or not at all, and concurrent
    // ones take turns (each copies only what the other has not).
    if (auto locked = session.run("copying events", k_import_lock); !locked) {
      return locked.error();
    }
    for (size_t first = 0; first < logs.size(); first += k_logs_per_query) {
      const size_t last = std::min(first + k_logs_per_query, logs.size());
      std::vector<std::string> names;
      for (size_t i = first; i < last; ++i) {
        names.push_back(logs[i].first);
      }
      auto present = session.run("copying events",
                                 "SELECT log, line FROM fingerprint_events WHERE log = ANY($1::text[]) AND logged",
                                 {text_array(names)});
      if (!present) {
        return present.error();
      }
      // A multiset: the directory may hold an event twice, and so may the
      // database after it; only what the database lacks is copied.
      std::unordered_map<std::string, size_t> have;
      for (int row = 0; row < PQntuples(present->get()); ++row) {
        have[std::string(PQgetvalue(present->get(), row, 0)) + '\n' + PQgetvalue(present->get(), row, 1)] += 1;
      }
      for (size_t i = first; i < last; ++i) {
        for (auto& [line, event] : logs[i].second) {
          if (auto it = have.find(logs[i].first + '\n' + line); it != have.end() && it->second > 0) {
            --it->second;
            ++report.events_present;
            continue;
          }
          pending.push_back({logs[i].first, std::move(event), std::move(line)});
        }
      }
    }
    // The chains: each log's new rows, and each build index's, in order.
    std::vector<std::vector<size_t>> chains;
    std::map<std::pair<std::string_view, std::string_view>, std::deque<size_t>> primary; // (log, line) -> rows
    std::vector<std::string> times;
    for (size_t row = 0; row < pending.size(); ++row) {
      if (row == 0 || pending[row].log != pending[row - 1].log) {
        chains.emplace_back();
      }
      chains.back().push_back(row);
      times.push_back(pending[row].event.time);
      if (pending[row].event.digest == pending[row].log) {
        primary[{pending[row].log, pending[row].line}].push_back(row);
      }
    }
    for (const auto& lines : *indexes) {
      auto& chain = chains.emplace_back();
      for (const auto& line : lines) {
        auto event = parse_event(line);
        if (!event) {
          continue;
        }
        if (auto it = primary.find({event->digest, line}); it != primary.end() && !it->second.empty()) {
          chain.push_back(it->second.front());
          it->second.pop_front();
        }
      }
    }
    const std::vector<size_t> order = merge_orders(times, chains);
    for (size_t first = 0; first < pending.size(); first += k_rows_per_insert) {
      Rows rows;
      for (size_t i = first; i < std::min(first + k_rows_per_insert, pending.size()); ++i) {
        Pending& row = pending[order[i]];
        rows.add(row.log, row.event, std::move(row.line));
      }
      if (auto inserted = session.insert("copying events", rows); !inserted) {
        return inserted.error();
      }
      if (progress) {
        progress(logs.size() + (logs.size() * (first + rows.log.size())) / pending.size(), logs.size() * 2);
      }
    }
    return {};
  });
  if (!copied) {
    return copied.error();
  }
  report.events_copied = pending.size();
  // Fresh statistics: without them the planner may walk the recursive
  // queries with a plan fit for an empty table (2.2 s instead of 83 ms on
  // 9,200 rows).
  if (auto analyzed = session.run("updating the statistics", "ANALYZE fingerprint_events"); !analyzed) {
    return analyzed.error();
  }
  if (progress) {
    progress(logs.size() * 2, logs.size() * 2);
  }
  return report;
}

} // namespace fingerprint::store
