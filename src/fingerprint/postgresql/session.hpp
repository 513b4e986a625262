#pragma once

// libpq, one statement at a time: what every part of the PostgreSQL store
// talks to the server through. Private to postgresql/.

#include <fingerprint/postgresql/postgres_store.hpp>

#include <libpq-fe.h>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::store {

struct PostgresStore::Connection
{
  PGconn* conn = nullptr;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();
};

namespace postgresql {

// Whether statements with parameters are prepared once per connection and
// executed by name after (the query server's kept connections:
// PostgresStore::keep_connections), rather than parsed and planned at each
// run. A connection's prepared statements are forgotten when it closes.
void prepare_statements(bool prepare);
void forget_prepared(const PGconn* conn);

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

// libpq's message on one line: they end in a newline and may span lines.
std::string one_line(std::string text);

// Whether a statement that failed with SQLSTATE `state` failed because
// the server is out of reach for now (Error::unavailable: a hook journals
// the call, a deliverer stops and keeps it), not because of the call.
bool is_unavailable_state(std::string_view state);

// Whether a failed connection's message says the server is there but
// cannot take one more connection right now (too many clients, starting).
bool is_unavailable_connect_message(std::string_view message);

// "{\"a\",\"b\"}": a text[] parameter (one round trip for a whole batch).
std::string text_array(const std::vector<std::string>& values);
// "{t,f}": a boolean[] parameter.
std::string bool_array(const std::vector<bool>& values);

// Bytes as lowercase hex, and back (nullopt: not hex): how a bytea travels,
// through decode(x, 'hex') and encode(x, 'hex'), whatever the server's
// bytea_output.
std::string hex_of(std::string_view bytes);
std::optional<std::string> bytes_of_hex(std::string_view hex);

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
  // Without parameters, the simple protocol: it takes several statements
  // (the schema's migrations).
  Expected<Result> run(std::string_view what, const char* sql, const std::vector<std::string>& params = {}) const;

  // One statement, its result's values in binary form: a bytea's bytes as
  // stored and a text's bytes as they are (PQgetlength says how many), not
  // hex to decode, which took a whole-store read of the manifests twice
  // the bytes on the wire and 14% of `builds`' time at 1,000,000 artifacts.
  Expected<Result> run_binary(std::string_view what,
                              const char* sql,
                              const std::vector<std::string>& params = {}) const;

  // Statements sent one after the other in one round trip (libpq's
  // pipeline mode), their results in order; an error is the first failing
  // statement's (those after it do not run). A transaction begun by one of
  // them and left open by a failure is rolled back. A connection that
  // cannot pipeline runs them one at a time.
  struct Statement
  {
    const char* sql;
    std::vector<std::string> params;
  };
  Expected<std::vector<Result>> run_together(std::string_view what, const std::vector<Statement>& statements) const;

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

private:
  // The error of a failed statement (its result, or the connection's).
  Error failure(std::string_view what, const PGresult* result) const;
  Expected<Result> execute(std::string_view what,
                           const char* sql,
                           const std::vector<std::string>& params,
                           bool binary) const;

  PGconn* m_conn;
  const std::string& m_location;
  mutable std::string m_last_state;
};

} // namespace postgresql

} // namespace fingerprint::store
