#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/provenance.hpp>

// Builds' provenance in the database: one row per build in
// fingerprint_provenance, made by the first put_provenance that misses it.
// Not a schema step, as fingerprint_calls is not: older runners never read
// it, and raising the schema version would lock them out.

namespace fingerprint::store {

using postgresql::Session;

namespace {

constexpr const char* k_provenance_table = R"sql(
CREATE TABLE IF NOT EXISTS fingerprint_provenance (
  project text COLLATE "C" NOT NULL,
  build text COLLATE "C" NOT NULL,
  document text NOT NULL, -- the JSON text as the recording hook wrote it
  recorded timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project, build)
);
)sql";

std::string
what_of(const BuildRef& build)
{
  return "the provenance of " + build.project + " " + build.build;
}

} // namespace

Expected<bool>
PostgresStore::put_provenance(const BuildRef& build, const std::string& document) const
{
  if (!m_has_schema) {
    return Error{m_location + ": store not opened for writing"};
  }
  const std::string what = "storing " + what_of(build);
  if (auto checked = parse_provenance(document, build, m_location + ": " + what_of(build)); !checked) {
    return checked.error();
  }
  const Session session(m_connection->conn, m_location);
  const char* sql = "INSERT INTO fingerprint_provenance (project, build, document) VALUES ($1, $2, $3) "
                    "ON CONFLICT DO NOTHING";
  auto inserted =
    postgresql::run_making_table(session, what, sql, {build.project, build.build, document}, k_provenance_table);
  if (!inserted) {
    return inserted.error();
  }
  m_no_provenance_table = false;
  m_all_provenance.reset();
  return std::string_view(PQcmdTuples(inserted->get())) != "0";
}

Expected<std::optional<std::string>>
PostgresStore::read_provenance(const BuildRef& build) const
{
  if (!m_has_schema || m_no_provenance_table) {
    return std::optional<std::string>();
  }
  const Session session(m_connection->conn, m_location);
  // A missing table reads as no provenance; other failures are errors.
  auto failed = [&](const Error& error) -> Expected<std::optional<std::string>> {
    if (session.last_state() == postgresql::k_undefined_table) {
      m_no_provenance_table = true;
      return std::optional<std::string>();
    }
    return error;
  };
  std::string document;
  if (m_every_build_read && !m_all_provenance) {
    auto all = session.run_binary("reading the builds' provenance",
                                  "SELECT project, build, document FROM fingerprint_provenance");
    if (!all) {
      return failed(all.error());
    }
    PGresult* rows = all->get();
    m_all_provenance.emplace();
    for (int row = 0; row < PQntuples(rows); ++row) {
      auto value = [&](int column) {
        return std::string(PQgetvalue(rows, row, column), static_cast<size_t>(PQgetlength(rows, row, column)));
      };
      m_all_provenance->emplace(value(0) + '\0' + value(1), value(2));
    }
  }
  if (m_all_provenance) {
    const auto found = m_all_provenance->find(build.project + '\0' + build.build);
    if (found == m_all_provenance->end()) {
      return std::optional<std::string>();
    }
    document = found->second;
  } else {
    auto result = session.run("reading " + what_of(build),
                              "SELECT document FROM fingerprint_provenance WHERE project = $1 AND build = $2",
                              {build.project, build.build});
    if (!result) {
      return failed(result.error());
    }
    if (PQntuples(result->get()) == 0) {
      return std::optional<std::string>();
    }
    document = PQgetvalue(result->get(), 0, 0);
  }
  if (auto checked = parse_provenance(document, build, m_location + ": " + what_of(build)); !checked) {
    return checked.error();
  }
  return std::optional<std::string>(std::move(document));
}

Expected<bool>
PostgresStore::remove_provenance(const BuildRef& build, bool dry_run) const
{
  if (!m_has_schema) {
    return false;
  }
  const Session session(m_connection->conn, m_location);
  const char* sql = dry_run ? "SELECT 1 FROM fingerprint_provenance WHERE project = $1 AND build = $2"
                            : "DELETE FROM fingerprint_provenance WHERE project = $1 AND build = $2";
  auto result = session.run("removing " + what_of(build), sql, {build.project, build.build});
  m_all_provenance.reset();
  if (!result) {
    if (session.last_state() == postgresql::k_undefined_table) {
      return false;
    }
    return result.error();
  }
  return dry_run ? PQntuples(result->get()) > 0 : std::string_view(PQcmdTuples(result->get())) != "0";
}

} // namespace fingerprint::store
