#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>

// The walks over consumers and installed copies: one recursive query for
// every log a walk may read, and every manifest entry and manifest user it
// may meet, then the walk itself in memory.

namespace fingerprint::store {

using postgresql::Result;
using postgresql::Session;

namespace {

// What a walk from one artifact may read, fetched at once.
struct Reachable
{
  Result result{nullptr, &PQclear};
  std::map<std::string, LogContents> logs;                     // artifact -> its log
  std::map<std::string, std::pair<int, int>> uses;             // input -> its rows [first, last) of entries
  std::map<std::string, std::vector<ManifestEntry>> manifests; // manifest -> its entries fetched, in order
  std::map<std::string, LogContents> users;                    // manifest -> the produced events made from it
};

// The logs a walk from $1 reaches: the start, its installed copies, and
// (when $2, `follow_consumers`) consumers' products, whether by a consumed
// event or as a manifest's user; as one array, kept on the server as the
// transaction's setting `fingerprint.reach` for k_reached_rows (so that
// the two go in one round trip). The manifest of an entry is
// looked up by its id row by row (the OFFSET 0 keeps the planner from
// joining the whole table): a recursive term's rows are estimated at
// hundreds, and a hash join then scanned every manifest at each step.
constexpr const char* k_reach = R"sql(
SELECT set_config('fingerprint.reach', (
WITH RECURSIVE reach(log) AS (
    SELECT $1::text
  UNION
    SELECT n.next FROM reach r CROSS JOIN LATERAL (
        SELECT CASE WHEN e.kind = 'consumed' THEN e.product ELSE e.digest END
        FROM fingerprint_events e
        WHERE e.log = r.log AND e.logged
          AND ((e.kind = 'consumed' AND $2::boolean)
            OR (e.kind = 'installed' AND e.digest <> e.log AND e.from_digest = e.log))
      UNION ALL
        SELECT u.digest
        FROM fingerprint_manifest_entries x
        CROSS JOIN LATERAL (SELECT digest FROM fingerprint_manifests WHERE id = x.manifest OFFSET 0) m
        JOIN fingerprint_events u ON u.inputs = m.digest AND u.listed AND u.kind = 'produced'
        WHERE x.input = r.log AND $2::boolean
    ) AS n(next)
)
SELECT array_agg(log) FROM reach
)::text, true))sql";

// Rows: (tag, key, id, position, a, b, c, d), ordered by the first four.
//   'e' an event of a log reached: key = the log, a = its line
//   'x' an entry listing an artifact reached: key = the input, id = the
//       manifest's id (the order manifests were stored in), a = the
//       manifest's digest, b = role code, c = size, d = path (hex)
//   'u' a user of such a manifest: key = the manifest, a = its line
// Reached: the array k_reach kept, in the setting named $1 (a parameter,
// so that the statement is prepared as the others are). A statement of its
// own, not planned with the recursion: planned with the recursion, it
// guessed 10,000 entries where there were 98 and read every manifest
// entry, manifest and event (1,000,000 relations: `consumers --transitive`
// of a header took 1.86 s, now 50 ms).
constexpr const char* k_reached_rows = R"sql(
WITH entries AS MATERIALIZED (
  SELECT x.input, x.manifest, x.position, m.digest, x.role, x.size, x.path
  FROM fingerprint_manifest_entries x
  CROSS JOIN LATERAL (SELECT digest FROM fingerprint_manifests WHERE id = x.manifest OFFSET 0) m
  WHERE x.input = ANY(current_setting($1)::text[])
)
SELECT 'e', e.log, e.id, 0, e.line, NULL::text, NULL::text, NULL::text
FROM fingerprint_events e WHERE e.log = ANY(current_setting($1)::text[]) AND e.logged
UNION ALL
SELECT 'u', u.inputs, u.id, 0, u.line, NULL, NULL, NULL
FROM (SELECT DISTINCT digest FROM entries) d
CROSS JOIN LATERAL (SELECT inputs, id, line FROM fingerprint_events
  WHERE inputs = d.digest AND listed AND kind = 'produced' OFFSET 0) u
UNION ALL
SELECT 'x', x.input, x.manifest, x.position, x.digest, x.role::text, x.size::text, encode(x.path, 'hex')
FROM entries x
ORDER BY 1, 2, 3, 4)sql";

// Both statements, in one snapshot: what the second reads is what the
// first walked. One round trip: the walk's array stays on the server
// (k_reach); sending it back and forth took a second round trip a walk
// (`why` makes seven).
Expected<Result>
reached_rows(const Session& session, const std::string& what, const DigestKey& start, bool follow_consumers)
{
  auto read = session.run_together(what,
                                   {{"BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", {}},
                                    {k_reach, {start.str(), follow_consumers ? "true" : "false"}},
                                    {k_reached_rows, {"fingerprint.reach"}},
                                    {"COMMIT", {}}});
  if (!read) {
    return read.error();
  }
  return std::move((*read)[2]);
}

Expected<Reachable>
reachable(const Session& session, const DigestKey& start, bool follow_consumers)
{
  auto result = reached_rows(session, "following consumers of " + start.str(), start, follow_consumers);
  if (!result) {
    return result.error();
  }
  Reachable reached;
  reached.result = std::move(*result);
  PGresult* rows = reached.result.get();
  std::map<std::string, std::vector<std::pair<int, ManifestEntry>>> entries;
  for (int row = 0; row < PQntuples(rows); ++row) {
    const char tag = *PQgetvalue(rows, row, 0);
    const char* key = PQgetvalue(rows, row, 1);
    if (tag == 'e' || tag == 'u') {
      postgresql::parse_row(
        PQgetvalue(rows, row, 2), PQgetvalue(rows, row, 4), (tag == 'e' ? reached.logs : reached.users)[key]);
      continue;
    }
    auto [at, first] = reached.uses.try_emplace(key, row, row + 1);
    at->second.second = row + 1;
    const auto input = parse_digest_key(key);
    auto path = postgresql::bytes_of_hex(PQgetvalue(rows, row, 7));
    const auto role = role_of_code(*PQgetvalue(rows, row, 5));
    if (!input || !path || !role) {
      continue; // manifest_uses() reports it
    }
    ManifestEntry entry{*role, input->hex, std::strtoull(PQgetvalue(rows, row, 6), nullptr, 10), std::move(*path)};
    entries[PQgetvalue(rows, row, 4)].emplace_back(std::atoi(PQgetvalue(rows, row, 3)), std::move(entry));
  }
  for (auto& [manifest, listed] : entries) {
    std::sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    auto& into = reached.manifests[manifest];
    for (auto& [position, entry] : listed) {
      into.push_back(std::move(entry));
    }
  }
  return reached;
}

// The manifests of a walk's rows as a store, so that add_manifest_consumers
// (artifact_record.hpp) makes the same events from them as from a store
// read one manifest at a time. Holds the entries that list artifacts of the
// walk, not whole manifests: those are all the walk looks at.
class ReachableManifests final : public Store
{
public:
  ReachableManifests(const Store& store, const Reachable& reached)
    : m_store(store)
    , m_reached(reached)
  {
  }

  Expected<std::optional<Manifest>>
  read_manifest(const DigestKey& key) const override
  {
    auto found = m_reached.manifests.find(key.str());
    if (found == m_reached.manifests.end()) {
      return std::optional<Manifest>();
    }
    return std::optional<Manifest>(Manifest{key.algorithm, found->second});
  }

  Expected<std::vector<ManifestUse>>
  find_manifest_uses(const DigestKey& input, std::vector<LogProblem>& problems) const override
  {
    auto found = m_reached.uses.find(input.str());
    if (found == m_reached.uses.end()) {
      return std::vector<ManifestUse>();
    }
    return postgresql::manifest_uses(m_reached.result, found->second.first, found->second.second, 4, problems);
  }

  // Nothing else is asked of it.
  const std::string&
  location() const override
  {
    return m_store.location();
  }
  Expected<void>
  append(const std::vector<Event>&, Warnings*) const override
  {
    return refused();
  }
  Expected<void>
  append_link(const DigestKey&, const Event&, Warnings*) const override
  {
    return refused();
  }
  Expected<LogContents>
  read_log(const DigestKey&) const override
  {
    return refused();
  }
  Expected<std::string>
  read_raw_log(const DigestKey&) const override
  {
    return refused();
  }
  Expected<std::vector<BuildRef>>
  list_builds() const override
  {
    return refused();
  }
  Expected<LogContents>
  read_build(const BuildRef&) const override
  {
    return refused();
  }
  Expected<CompactionResult>
  remove_events(const DigestKey&, const EventFilter&, bool) const override
  {
    return refused();
  }
  Expected<CompactionResult>
  remove_build_events(const BuildRef&, const EventFilter&, bool) const override
  {
    return refused();
  }
  Expected<FsckReport>
  fsck(const FsckOptions&) const override
  {
    return refused();
  }

private:
  Error
  refused() const
  {
    return Error{m_store.location() + ": not part of a consumer walk"};
  }

  const Store& m_store;
  const Reachable& m_reached;
};

// load_record() from the rows fetched.
RecordLoader
loader_of(const Store& store, const Reachable& reached)
{
  return [&store, &reached](const DigestKey& key) -> Expected<ArtifactRecord> {
    auto found = reached.logs.find(key.str());
    ArtifactRecord record = fold_record(key, found == reached.logs.end() ? LogContents{} : found->second);
    const ReachableManifests manifests(store, reached);
    auto added =
      add_manifest_consumers(manifests, record, [&reached](const DigestKey& manifest) -> Expected<std::vector<Event>> {
        auto users = reached.users.find(manifest.str());
        return fold_record(manifest, users == reached.users.end() ? LogContents{} : users->second).manifest_users;
      });
    if (!added) {
      return added.error();
    }
    return record;
  };
}

} // namespace

Expected<ArtifactRecord>
PostgresStore::load_artifact(const DigestKey& key) const
{
  if (!m_has_schema) {
    return fold_record(key, LogContents{});
  }
  // One statement for the log, the entries listing it and their users,
  // where reading manifest by manifest took two per manifest.
  auto reached = reachable(Session(m_connection->conn, m_location), key, false);
  if (!reached) {
    return reached.error();
  }
  return loader_of(*this, *reached)(key);
}

Expected<std::vector<ConsumerHit>>
PostgresStore::find_consumers(const DigestKey& key, bool transitive, std::vector<LogProblem>& problems) const
{
  if (!m_has_schema) {
    return std::vector<ConsumerHit>{};
  }
  auto reached = reachable(Session(m_connection->conn, m_location), key, transitive);
  if (!reached) {
    return reached.error();
  }
  return walk_consumers(loader_of(*this, *reached), key, transitive, problems);
}

Expected<std::vector<Event>>
PostgresStore::find_chain(const DigestKey& from, const DigestKey& to, std::vector<LogProblem>& problems) const
{
  if (!m_has_schema) {
    return std::vector<Event>{};
  }
  auto reached = reachable(Session(m_connection->conn, m_location), from, true);
  if (!reached) {
    return reached.error();
  }
  return walk_chain(loader_of(*this, *reached), from, to, problems);
}

} // namespace fingerprint::store
