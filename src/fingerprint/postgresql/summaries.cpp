#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>

#include <cstdlib>

// The builds summary in the database (store/build_summary.hpp): the text a
// directory store keeps in builds.summary, in the one row of
// fingerprint_build_summaries, which gc writes. Not a schema step, as
// fingerprint_provenance is not: older runners never read it, and their
// appends make its lines out of date, not wrong, since a build's stamp is
// read from its events, not kept beside them.
//
// A build's stamp is the number of rows in its index and the highest of
// their ids: ids only grow, so an append raises the highest, and a removal
// (gc deletes a row, or takes it out of the index) lowers the count unless
// an append raises the highest too. All builds' stamps come in one
// statement, at the first asked for after the summary is read.

namespace fingerprint::store {

using postgresql::Session;

namespace {

constexpr const char* k_summaries_table = R"sql(
CREATE TABLE IF NOT EXISTS fingerprint_build_summaries (
  one boolean PRIMARY KEY DEFAULT true CHECK (one), -- a single row
  summary text NOT NULL, -- the text of a directory store's builds.summary
  written timestamptz NOT NULL DEFAULT now()
);
)sql";

} // namespace

Expected<std::optional<std::string>>
PostgresStore::read_build_summaries() const
{
  m_build_stamps.reset();
  // A query that reads the summary reads every build's provenance next.
  m_every_build_read = true;
  if (!m_has_schema) {
    return std::optional<std::string>();
  }
  const Session session(m_connection->conn, m_location);
  auto result = session.run_binary("reading the builds summary", "SELECT summary FROM fingerprint_build_summaries");
  if (!result) {
    if (session.last_state() == postgresql::k_undefined_table) {
      return std::optional<std::string>();
    }
    return result.error();
  }
  if (PQntuples(result->get()) == 0) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(
    std::string(PQgetvalue(result->get(), 0, 0), static_cast<size_t>(PQgetlength(result->get(), 0, 0))));
}

Expected<bool>
PostgresStore::write_build_summaries(const std::string& text) const
{
  if (!m_has_schema) {
    return false;
  }
  const Session session(m_connection->conn, m_location);
  const char* sql = "INSERT INTO fingerprint_build_summaries (summary) VALUES ($1) "
                    "ON CONFLICT (one) DO UPDATE SET summary = excluded.summary, written = now()";
  auto written = postgresql::run_making_table(session, "writing the builds summary", sql, {text}, k_summaries_table);
  if (!written) {
    return written.error();
  }
  return true;
}

std::optional<BuildStamp>
PostgresStore::build_stamp(const BuildRef& build) const
{
  if (!m_has_schema) {
    return std::nullopt;
  }
  if (!m_build_stamps) {
    auto result = Session(m_connection->conn, m_location)
                    .run("reading the builds' stamps",
                         "SELECT project, build, count(*), max(id) FROM fingerprint_events WHERE indexed "
                         "GROUP BY project, build");
    m_build_stamps.emplace();
    if (!result) {
      // No stamps: every build is summarized from its index, as without a
      // summary (and the statement is not tried again for each build).
      return std::nullopt;
    }
    PGresult* rows = result->get();
    m_build_stamps->reserve(static_cast<size_t>(PQntuples(rows)));
    for (int row = 0; row < PQntuples(rows); ++row) {
      BuildStamp stamp;
      stamp.size = std::strtoull(PQgetvalue(rows, row, 2), nullptr, 10);
      stamp.inode = std::strtoull(PQgetvalue(rows, row, 3), nullptr, 10);
      m_build_stamps->emplace(std::string(PQgetvalue(rows, row, 0)) + '\0' + PQgetvalue(rows, row, 1), stamp);
    }
  }
  const auto found = m_build_stamps->find(build.project + '\0' + build.build);
  if (found == m_build_stamps->end()) {
    return std::nullopt;
  }
  return found->second;
}

} // namespace fingerprint::store
