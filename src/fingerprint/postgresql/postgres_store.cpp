#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/spool.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <poll.h>
#include <set>
#include <tuple>

extern char** environ;

namespace fingerprint::store {

using postgresql::Result;
using postgresql::row_for;
using postgresql::Rows;
using postgresql::Session;

namespace {

// The events of a result whose columns are (id, line).
LogContents
contents_of(const Result& result)
{
  LogContents contents;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    postgresql::parse_row(PQgetvalue(result.get(), row, 0), PQgetvalue(result.get(), row, 1), contents);
  }
  return contents;
}

// The rows of one artifact's log, in order: (id, line). An input
// manifest's log is its users (the directory store appends each to it too).
Expected<Result>
log_rows(const Session& session, const DigestKey& key)
{
  return session.run(
    "reading the log of " + key.str(),
    "SELECT id, line FROM fingerprint_events WHERE (log = $1 AND logged) OR (inputs = $1 AND listed) ORDER BY id",
    {key.str()});
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
  return mask_url_password(url);
}

namespace {

// keep_connections(): idle connections by key, the oldest first. Calls of
// the query server take turns, so one a key is what is ever kept.
constexpr size_t k_kept_connections = 8;
std::atomic<bool> g_keep_connections{false};
std::mutex g_kept_mutex;
std::deque<std::pair<std::string, std::unique_ptr<PostgresStore::Connection>>> g_kept;

// A kept connection's key: the URL, and every PG variable of the
// environment, which libpq reads as it connects (PGHOST, PGPASSWORD, ...).
std::string
kept_key(const std::string& url)
{
  std::string key = url;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    if (std::strncmp(*variable, "PG", 2) == 0) {
      key += '\0';
      key += *variable;
    }
  }
  return key;
}

std::unique_ptr<PostgresStore::Connection>
take_kept(const std::string& key)
{
  std::lock_guard lock(g_kept_mutex);
  const auto found = std::find_if(g_kept.begin(), g_kept.end(), [&](const auto& kept) { return kept.first == key; });
  if (found == g_kept.end()) {
    return nullptr;
  }
  auto connection = std::move(found->second);
  g_kept.erase(found);
  return connection;
}

// Whether the server answers an empty statement on `conn` within
// k_kept_answer_ms. A kept connection's server may have ended the backend
// (it then reads as closed) or stopped answering at all (paused, or cut
// off): a statement would then wait as long as TCP does, where a new
// connection gives up after connect_timeout.
constexpr int k_kept_answer_ms = 2000;

bool
answers(PGconn* conn)
{
  // What the server sent while the connection was idle (the message of a
  // backend it ended) is read first: a closed connection shows as such.
  if (PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE
      || PQsendQuery(conn, "") == 0) {
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_kept_answer_ms);
  while (PQisBusy(conn) != 0) {
    const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd waiting{PQsocket(conn), POLLIN, 0};
    const int ready = left > 0 ? ::poll(&waiting, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0 || PQconsumeInput(conn) == 0) {
      return false;
    }
  }
  bool empty = true;
  while (PGresult* result = PQgetResult(conn)) {
    empty = empty && PQresultStatus(result) == PGRES_EMPTY_QUERY;
    PQclear(result);
  }
  return empty && PQstatus(conn) == CONNECTION_OK;
}

} // namespace

void
PostgresStore::keep_connections(bool keep)
{
  g_keep_connections = keep;
  postgresql::prepare_statements(keep);
}

PostgresStore::PostgresStore(std::string location,
                             std::unique_ptr<Connection> connection,
                             bool has_schema,
                             std::string kept_as)
  : m_location(std::move(location))
  , m_connection(std::move(connection))
  , m_kept_as(std::move(kept_as))
  , m_has_schema(has_schema)
{
}

PostgresStore::~PostgresStore()
{
  // Kept only idle and open: a statement cut short leaves neither.
  if (m_kept_as.empty() || m_connection == nullptr || PQstatus(m_connection->conn) != CONNECTION_OK
      || PQtransactionStatus(m_connection->conn) != PQTRANS_IDLE) {
    return;
  }
  std::lock_guard lock(g_kept_mutex);
  g_kept.emplace_back(std::move(m_kept_as), std::move(m_connection));
  if (g_kept.size() > k_kept_connections) {
    g_kept.pop_front();
  }
}

Expected<std::unique_ptr<PostgresStore>>
PostgresStore::open(const std::string& url, Access access)
{
  std::string location = mask_password(url);
  std::string key = g_keep_connections ? kept_key(url) : std::string();
  if (!key.empty()) {
    if (auto kept = take_kept(key); kept != nullptr && answers(kept->conn)) {
      auto has_schema = postgresql::ensure_schema(Session(kept->conn, location), access);
      if (has_schema) {
        return std::unique_ptr<PostgresStore>(
          new PostgresStore(std::move(location), std::move(kept), *has_schema, std::move(key)));
      }
      // Closed since, or failing: a new connection says which.
    }
  }
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
    Error error{location + ": cannot connect: " + postgresql::one_line(PQerrorMessage(connection->conn))};
    // Out of reach, or up and refusing us? The message says it when the
    // server is up but full (too many clients: a ping says all is well);
    // else a ping answers without credentials. After a timeout it would
    // only wait as long again.
    error.unavailable = PQconnectionNeedsPassword(connection->conn) == 0
                        && (error.message.find("timeout expired") != std::string::npos
                            || postgresql::is_unavailable_connect_message(error.message)
                            || PQpingParams(keywords, values, 1) != PQPING_OK);
    return error;
  }
  Session session(connection->conn, location);
  // A kept connection runs the same statements again and again: planned
  // once, when prepared, not at each run (a custom plan is the same index
  // lookups here, and planning them was most of each statement's time).
  if (!key.empty()) {
    (void)session.run("preparing the connection", "SET plan_cache_mode = force_generic_plan");
  }
  auto has_schema = postgresql::ensure_schema(session, access);
  if (!has_schema) {
    return has_schema.error();
  }
  return std::unique_ptr<PostgresStore>(
    new PostgresStore(std::move(location), std::move(connection), *has_schema, std::move(key)));
}

const std::string&
PostgresStore::location() const
{
  return m_location;
}

namespace {

// The rows of one call's events, or why one of them cannot be stored.
Expected<Rows>
rows_of(const std::string& location, const std::vector<Event>& events)
{
  Rows rows;
  for (const Event& event : events) {
    auto row = row_for(event);
    if (!row) {
      return Error{location + ": " + row.error().message + "; nothing was recorded"};
    }
    rows.add(row->event.digest, row->event, std::move(row->line));
  }
  return rows;
}

} // namespace

Expected<void>
PostgresStore::append(const std::vector<Event>& events, Warnings*) const
{
  if (!m_has_schema) {
    return Error{m_location + ": store not opened for writing"};
  }
  auto rows = rows_of(m_location, events);
  if (!rows) {
    return rows.error();
  }
  // One statement: every event of the call lands, or none does.
  return rows->insert(Session(m_connection->conn, m_location), "recording");
}

Expected<bool>
PostgresStore::append_call(const std::string& call, const std::vector<Event>& events, Warnings*) const
{
  if (!m_has_schema) {
    return Error{m_location + ": store not opened for writing"};
  }
  auto rows = rows_of(m_location, events);
  if (!rows) {
    return rows.error();
  }
  return rows->insert_call(Session(m_connection->conn, m_location), "recording", call);
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
  rows.add(log.str(), row->event, std::move(row->line));
  return rows.insert(Session(m_connection->conn, m_location), "recording");
}

Expected<LogContents>
PostgresStore::read_log(const DigestKey& key) const
{
  if (!m_has_schema) {
    return LogContents{};
  }
  auto rows = log_rows(Session(m_connection->conn, m_location), key);
  if (!rows) {
    return rows.error();
  }
  return contents_of(*rows);
}

Expected<std::map<std::string, LogContents>>
PostgresStore::read_logs(const std::vector<DigestKey>& keys) const
{
  std::map<std::string, LogContents> logs;
  if (keys.empty() || !m_has_schema) {
    for (const DigestKey& key : keys) {
      logs[key.str()];
    }
    return logs;
  }
  for (const DigestKey& key : keys) {
    logs[key.str()];
  }
  // Each key once, as a text[] literal: a key ("sha256:<hex>") needs no quoting.
  std::string array = "{";
  for (const auto& [key, none] : logs) {
    array += (array.size() > 1 ? "," : "") + key;
  }
  array += '}';
  // Each key's rows as log_rows() reads them (OFFSET 0: one key at a time,
  // by the two indexes, however many keys the planner expects).
  auto rows = Session(m_connection->conn, m_location)
                .run("reading " + std::to_string(keys.size()) + " logs",
                     "SELECT k.log, e.id, e.line FROM unnest($1::text[]) AS k(log) CROSS JOIN LATERAL ("
                     " SELECT id, line FROM fingerprint_events"
                     " WHERE (log = k.log AND logged) OR (inputs = k.log AND listed) OFFSET 0) e"
                     " ORDER BY 1, 2",
                     {array});
  if (!rows) {
    return rows.error();
  }
  for (int row = 0; row < PQntuples(rows->get()); ++row) {
    postgresql::parse_row(
      PQgetvalue(rows->get(), row, 1), PQgetvalue(rows->get(), row, 2), logs[PQgetvalue(rows->get(), row, 0)]);
  }
  return logs;
}

Expected<std::string>
PostgresStore::read_raw_log(const DigestKey& key) const
{
  std::string text;
  if (!m_has_schema) {
    return text;
  }
  auto rows = log_rows(Session(m_connection->conn, m_location), key);
  if (!rows) {
    return rows.error();
  }
  for (int row = 0; row < PQntuples(rows->get()); ++row) {
    text += PQgetvalue(rows->get(), row, 1);
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
  if (!m_has_schema) {
    return LogContents{};
  }
  auto result =
    Session(m_connection->conn, m_location)
      .run("reading build " + build.build + " of " + build.project,
           "SELECT id, line FROM fingerprint_events WHERE indexed AND project = $1 AND build = $2 ORDER BY id",
           {build.project, build.build});
  if (!result) {
    return result.error();
  }
  return contents_of(*result);
}

namespace {

// Rows of (project, build, id, line), in any order: each build's events in
// id order, the builds in byte order, as list_builds sorts them. Sorted
// here, not by the server: a sort of whole rows spills to disk at the
// default work_mem (54 ms for 9,200 rows), sorting row numbers takes 2 ms.
void
visit_builds(PGresult* rows, const Store::BuildVisitor& each)
{
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
      postgresql::parse_row(PQgetvalue(rows, each_row, 2), PQgetvalue(rows, each_row, 3), contents);
    }
    each(build, contents);
    first = at;
  }
}

} // namespace

Expected<void>
PostgresStore::for_each_build(const std::string& project, const BuildVisitor& each) const
{
  if (!m_has_schema) {
    return {};
  }
  m_whole_store_read = m_whole_store_read || project.empty();
  m_every_build_read = m_every_build_read || project.empty();
  auto result =
    Session(m_connection->conn, m_location)
      .run("reading the build index",
           "SELECT project, build, id, line FROM fingerprint_events WHERE indexed AND ($1 = '' OR project = $1)",
           {project});
  if (!result) {
    return result.error();
  }
  visit_builds(result->get(), each);
  return {};
}

Expected<void>
PostgresStore::for_each_build_of(const std::vector<BuildRef>& builds, const BuildVisitor& each) const
{
  if (!m_has_schema || builds.empty()) {
    return {};
  }
  // Most of the builds (a summary written long ago, or none): reading them
  // all is cheaper than the join below (1,000,000 artifacts, every build:
  // 1.26 s against 2.4 s).
  if (m_build_stamps && 2 * builds.size() > m_build_stamps->size()) {
    std::set<std::pair<std::string_view, std::string_view>> wanted;
    for (const BuildRef& build : builds) {
      wanted.emplace(build.project, build.build);
    }
    return for_each_build({}, [&](const BuildRef& build, LogContents& index) {
      if (wanted.contains({build.project, build.build})) {
        each(build, index);
      }
    });
  }
  std::vector<std::string> projects;
  std::vector<std::string> ids;
  for (const BuildRef& build : builds) {
    projects.push_back(build.project);
    ids.push_back(build.build);
  }
  const std::vector<std::string> params{postgresql::text_array(projects), postgresql::text_array(ids)};
  const std::string rows_of_builds =
    "FROM fingerprint_events e JOIN unnest($1::text[], $2::text[]) AS b(project, build) "
    "ON e.project = b.project COLLATE \"C\" AND e.build = b.build COLLATE \"C\" "
    "WHERE e.indexed";
  const Session session(m_connection->conn, m_location);
  // The input manifests their products name, which a summary reads next:
  // in one statement, not one each (unless a read of every build has
  // asked for all of them).
  if (!m_whole_store_read) {
    const std::string sql = "SELECT m.digest, m.bytes FROM fingerprint_manifests m WHERE m.digest IN (SELECT e.inputs "
                            + rows_of_builds + " AND e.inputs <> '')";
    auto manifests = session.run_binary("reading the builds' input manifests", sql.c_str(), params);
    if (!manifests) {
      return manifests.error();
    }
    keep_manifests(manifests->get());
  }
  const std::string sql = "SELECT e.project, e.build, e.id, e.line " + rows_of_builds;
  auto result = session.run("reading the build indexes", sql.c_str(), params);
  if (!result) {
    return result.error();
  }
  visit_builds(result->get(), each);
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
      postgresql::parse_row(PQgetvalue(result->get(), row, 0), PQgetvalue(result->get(), row, 1), one);
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
      std::vector<std::string> leave_params = {postgresql::text_array(ids)};
      leave_params.insert(leave_params.end(), params.begin(), params.end());
      if (auto left = session.run(what, leave, leave_params); !left) {
        return left.error();
      }
      if (auto gone =
            session.run(what,
                        "DELETE FROM fingerprint_events WHERE id = ANY($1::bigint[]) AND NOT logged AND NOT indexed "
                        "AND NOT listed",
                        {postgresql::text_array(ids)});
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
                     "SELECT id, line FROM fingerprint_events WHERE (log = $1 AND logged) OR (inputs = $1 AND "
                     "listed) ORDER BY id FOR UPDATE",
                     // An input manifest's log is its users' rows (`listed`).
                     "UPDATE fingerprint_events SET logged = logged AND log <> $2, listed = listed AND inputs <> $2 "
                     "WHERE id = ANY($1::bigint[])",
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
                     "UPDATE fingerprint_events SET indexed = false WHERE id = ANY($1::bigint[]) AND project = $2 "
                     "AND build = $3",
                     {build.project, build.build},
                     drop,
                     dry_run);
}

} // namespace fingerprint::store
