#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace fingerprint::store::postgresql {

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

std::string
hex_of(std::string_view bytes)
{
  return util::to_hex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::optional<std::string>
bytes_of_hex(std::string_view hex)
{
  std::string bytes;
  if (!util::append_from_hex(hex, bytes)) {
    return std::nullopt;
  }
  return bytes;
}

bool
is_unavailable_state(std::string_view state)
{
  // Each leaves the statement undone, or done without our knowing (a lost
  // COMMIT's answer, which a journaled call's id settles), and says nothing
  // about the call itself: the same statement succeeds later.
  //   08     the connection is gone or failed
  //   53     the server lacks resources: too many clients (53300), disk full
  //          (53100), out of memory (53200)
  //   57P    the server is shutting down, crashed, starting (57P01-57P04)
  //   57014  the statement timeout; 55P03 a lock not granted in time (a VACUUM FULL)
  //   40     a serialization failure or a deadlock: the transaction was rolled back
  //   25006  a read-only transaction: a standby, or a primary demoted by a failover
  //   58     a system error on the server (an I/O error)
  // Everything else (22 data, 23 constraints, 42 syntax or a missing
  // privilege, ...) is about the call: it would fail again.
  return state.starts_with("08") || state.starts_with("53") || state.starts_with("57P") || state == "57014"
         || state == "55P03" || state.starts_with("40") || state == "25006" || state.starts_with("58");
}

bool
is_unavailable_connect_message(std::string_view message)
{
  // What a server that is there but cannot take one more connection says
  // (no SQLSTATE reaches libpq's caller at connect time; a ping says the
  // server is fine): 53300, 57P03, 53200, 53000 as PostgreSQL 12-16 word
  // them in English (a server with translated messages is only recognized
  // by the ping, which catches 57P03).
  constexpr std::string_view k_out_of_reach[] = {
    "too many clients already",
    "too many connections for",
    "remaining connection slots are reserved",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "the database system is not accepting connections",
    "could not fork new process for connection",
    "out of memory",
  };
  return std::any_of(std::begin(k_out_of_reach), std::end(k_out_of_reach), [&](std::string_view text) {
    return message.find(text) != std::string_view::npos;
  });
}

} // namespace fingerprint::store::postgresql

namespace fingerprint::store {

PostgresStore::Connection::~Connection()
{
  if (conn != nullptr) {
    postgresql::forget_prepared(conn);
    PQfinish(conn);
  }
}

} // namespace fingerprint::store

namespace fingerprint::store::postgresql {

Expected<Result>
Session::run(std::string_view what, const char* sql, const std::vector<std::string>& params) const
{
  return execute(what, sql, params, false);
}

Expected<Result>
Session::run_binary(std::string_view what, const char* sql, const std::vector<std::string>& params) const
{
  return execute(what, sql, params, true);
}

namespace {

// prepare_statements(): the statements each kept connection has prepared,
// by their text, and the name each was prepared under.
std::atomic<bool> g_prepare{false};
std::mutex g_prepared_mutex;
std::unordered_map<const PGconn*, std::unordered_map<std::string, std::string>> g_prepared;
unsigned long g_prepared_count = 0;

// The name `sql` is prepared under on `conn`, preparing it first; empty when
// it could not be (the statement then runs as one of its own, which says
// what is wrong with it).
std::string
prepared_name(PGconn* conn, const char* sql, int count)
{
  std::lock_guard lock(g_prepared_mutex);
  auto& statements = g_prepared[conn];
  if (const auto found = statements.find(sql); found != statements.end()) {
    return found->second;
  }
  // Names are never used twice in a process: a statement forgotten after
  // an error stays prepared on its connection under its old name.
  std::string name = "fingerprint_" + std::to_string(++g_prepared_count);
  const Result prepared(PQprepare(conn, name.c_str(), sql, count, nullptr), &PQclear);
  if (!prepared || PQresultStatus(prepared.get()) != PGRES_COMMAND_OK) {
    return {};
  }
  statements.emplace(sql, name);
  return name;
}

void
forget_statement(const PGconn* conn, const char* sql)
{
  std::lock_guard lock(g_prepared_mutex);
  if (const auto found = g_prepared.find(conn); found != g_prepared.end()) {
    found->second.erase(sql);
  }
}

} // namespace

void
prepare_statements(bool prepare)
{
  g_prepare = prepare;
}

void
forget_prepared(const PGconn* conn)
{
  std::lock_guard lock(g_prepared_mutex);
  g_prepared.erase(conn);
}

Expected<Result>
Session::execute(std::string_view what, const char* sql, const std::vector<std::string>& params, bool binary) const
{
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params) {
    values.push_back(param.c_str());
  }
  const int count = static_cast<int>(values.size());
  const std::string name = g_prepare && count > 0 ? prepared_name(m_conn, sql, count) : std::string();
  Result result(!name.empty()
                  ? PQexecPrepared(m_conn, name.c_str(), count, values.data(), nullptr, nullptr, binary ? 1 : 0)
                : count == 0 && !binary
                  ? PQexec(m_conn, sql)
                  : PQexecParams(m_conn, sql, count, nullptr, values.data(), nullptr, nullptr, binary ? 1 : 0),
                &PQclear);
  const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (!name.empty() && status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    forget_statement(m_conn, sql); // prepared anew next time, whatever failed
  }
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    return result;
  }
  return failure(what, result.get());
}

Error
Session::failure(std::string_view what, const PGresult* result) const
{
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  m_last_state = state != nullptr ? state : "";
  const char* message = result != nullptr ? PQresultErrorMessage(result) : "";
  Error error{m_location + ": " + std::string(what) + ": "
              + one_line(*message != '\0' ? message : PQerrorMessage(m_conn))};
  error.unavailable = PQstatus(m_conn) == CONNECTION_BAD || is_unavailable_state(m_last_state);
  return error;
}

Expected<std::vector<Result>>
Session::run_together(std::string_view what, const std::vector<Statement>& statements) const
{
  std::vector<Result> results;
  // Prepared first: preparing is a round trip of its own (once a connection).
  std::vector<std::string> names;
  for (const Statement& statement : statements) {
    const int count = static_cast<int>(statement.params.size());
    names.push_back(g_prepare && count > 0 ? prepared_name(m_conn, statement.sql, count) : std::string());
  }
  if (PQenterPipelineMode(m_conn) != 1) {
    for (const Statement& statement : statements) {
      auto result = run(what, statement.sql, statement.params);
      if (!result) {
        if (PQtransactionStatus(m_conn) == PQTRANS_INERROR) {
          (void)run(what, "ROLLBACK");
        }
        return result.error();
      }
      results.push_back(std::move(*result));
    }
    return results;
  }
  bool sent = true;
  for (size_t i = 0; i < statements.size() && sent; ++i) {
    std::vector<const char*> values;
    for (const auto& param : statements[i].params) {
      values.push_back(param.c_str());
    }
    const int count = static_cast<int>(values.size());
    sent = (names[i].empty()
              ? PQsendQueryParams(m_conn, statements[i].sql, count, nullptr, values.data(), nullptr, nullptr, 0)
              : PQsendQueryPrepared(m_conn, names[i].c_str(), count, values.data(), nullptr, nullptr, 0))
           == 1;
  }
  sent = sent && PQpipelineSync(m_conn) == 1;
  std::optional<Error> failed;
  if (!sent) {
    failed = failure(what, nullptr);
  }
  // Each statement's result and the null after it, then the sync's.
  for (size_t i = 0; i < statements.size() && sent; ++i) {
    Result result(PQgetResult(m_conn), &PQclear);
    if (!result) {
      failed = failed ? failed : failure(what, nullptr);
      sent = false; // the connection is gone: nothing more comes
      break;
    }
    while (PGresult* rest = PQgetResult(m_conn)) {
      PQclear(rest);
    }
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      if (!names[i].empty()) {
        forget_statement(m_conn, statements[i].sql);
      }
      if (!failed) {
        failed = failure(what, result.get());
      }
    }
    results.push_back(std::move(result));
  }
  if (sent) {
    const Result sync(PQgetResult(m_conn), &PQclear); // PGRES_PIPELINE_SYNC
  }
  PQexitPipelineMode(m_conn);
  if (failed) {
    if (PQtransactionStatus(m_conn) == PQTRANS_INERROR || PQtransactionStatus(m_conn) == PQTRANS_INTRANS) {
      (void)run(what, "ROLLBACK");
    }
    return *failed;
  }
  return results;
}

} // namespace fingerprint::store::postgresql
