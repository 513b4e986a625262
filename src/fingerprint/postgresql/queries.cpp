#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <map>

// The walks over consumers and installed copies: one recursive query for
// every log a walk may read, then the walk itself in memory.

namespace fingerprint::store {

using postgresql::Session;

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
    postgresql::parse_row(
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

} // namespace fingerprint::store
