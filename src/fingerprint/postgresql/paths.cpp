#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/store/path_index.hpp>

#include <algorithm>
#include <unordered_map>

// The index by path in the database (store/path_index.hpp): per build, the
// hashes of the paths its events name and of its products' manifests'
// inputs, in fingerprint_path_index, which gc writes whole in one
// transaction. Each row keeps the build's stamp when it was read (its index
// rows' count and highest id, as the builds summary's): a build whose stamp
// is another now, or that has no row, is read whatever the path, so no
// writer keeps anything and older runners' appends leave the index out of
// date, never wrong. Not a schema step, as fingerprint_build_summaries is
// not. A query: one statement for the stamps and the builds the hashes
// name (two GIN indexes), then those builds.
//
// The stamps of every build took 24 ms of a 1,000,000-artifact store's
// 30 ms statement (an index-only scan of 100,000 rows, grouped), so gc now
// also keeps a mark: the highest event id when it began, taken while no
// writer is between its insert and its commit (LOCK ... IN SHARE MODE waits
// for them, and a writer draws its ids only once it holds its lock). Every
// event at or below the mark is in the index; any other has a higher id. A
// query then reads the builds the hashes name and those with an event above
// the mark (the primary key's range), whatever their stamps. A build gc
// could not index has a row of stamp -1: read whatever the path. An index
// without a mark (an older runner's gc) is read by the stamps, as before.

namespace fingerprint::store {

using postgresql::Session;

namespace {

constexpr const char* k_path_index_table = R"sql(
CREATE TABLE IF NOT EXISTS fingerprint_path_index (
  project text COLLATE "C" NOT NULL,
  build text COLLATE "C" NOT NULL,
  rows bigint NOT NULL,     -- the build's stamp when it was read: its index rows
  last_id bigint NOT NULL,  -- and the highest of their ids
  paths bigint[] NOT NULL,  -- the hashes of the paths its events name
  inputs bigint[] NOT NULL, -- and of its products' manifests' inputs
  PRIMARY KEY (project, build)
);
CREATE INDEX IF NOT EXISTS fingerprint_path_index_paths ON fingerprint_path_index USING gin (paths);
CREATE INDEX IF NOT EXISTS fingerprint_path_index_inputs ON fingerprint_path_index USING gin (inputs);
CREATE INDEX IF NOT EXISTS fingerprint_path_index_unread ON fingerprint_path_index (rows) WHERE rows < 0;
CREATE TABLE IF NOT EXISTS fingerprint_path_index_mark (
  last_id bigint NOT NULL   -- every event up to it is in the index
);
)sql";

// "{1,-2,3}": hashes as a bigint[] literal (the bits of each, signed).
std::string
hash_array(std::vector<uint64_t>& hashes)
{
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  std::string text = "{";
  for (const uint64_t hash : hashes) {
    if (text.size() > 1) {
      text += ',';
    }
    text += std::to_string(static_cast<int64_t>(hash));
  }
  return text + "}";
}

// The builds of a result whose columns are (project, build, named,
// through): named by the index for a path, through its inputs when it
// names one there; else (changed since, or never indexed) through anything.
Store::BuildsAtPaths
found_builds(PGresult* rows)
{
  Store::BuildsAtPaths found;
  for (int row = 0; row < PQntuples(rows); ++row) {
    found.builds.push_back({PQgetvalue(rows, row, 0), PQgetvalue(rows, row, 1)});
    const bool named = PQgetvalue(rows, row, 2)[0] == 't';
    found.through_inputs.push_back(!named || PQgetvalue(rows, row, 3)[0] == 't');
  }
  return found;
}

} // namespace

std::optional<Store::BuildsAtPaths>
PostgresStore::builds_at_paths(const std::vector<std::string>& paths) const
{
  if (!m_has_schema) {
    return std::nullopt;
  }
  std::vector<uint64_t> hashes;
  for (const std::string& path : paths) {
    hashes.push_back(path_hash(path));
  }
  const Session session(m_connection->conn, m_location);
  auto mark = session.run("reading the index by path", "SELECT last_id FROM fingerprint_path_index_mark");
  if (mark && PQntuples(mark->get()) == 1) {
    // The builds the index names for a path, those it could not index, and
    // those with events above the mark.
    const char* sql = R"sql(
WITH changed AS (
  SELECT DISTINCT project, build FROM fingerprint_events WHERE id > $2::bigint AND indexed
), named AS (
  SELECT project, build, rows < 0 OR inputs && $1::bigint[] AS through FROM fingerprint_path_index
  WHERE paths && $1::bigint[] OR inputs && $1::bigint[] OR rows < 0
)
SELECT project, build, n.project IS NOT NULL AND c.project IS NULL, coalesce(n.through, true)
FROM named n FULL JOIN changed c USING (project, build)
ORDER BY project, build)sql";
    auto result = session.run("reading the index by path", sql, {hash_array(hashes), PQgetvalue(mark->get(), 0, 0)});
    if (!result) {
      return std::nullopt; // out of reach: every build is read
    }
    return found_builds(result->get());
  }
  // Every build with its stamp now; those the index names for a path, or
  // whose row is missing or of another stamp, are read.
  const char* sql = R"sql(
WITH stamps AS (
  SELECT project, build, count(*) AS rows, max(id) AS last_id FROM fingerprint_events WHERE indexed
  GROUP BY project, build
), named AS (
  SELECT project, build, inputs && $1::bigint[] AS through FROM fingerprint_path_index
  WHERE paths && $1::bigint[] OR inputs && $1::bigint[]
)
SELECT s.project, s.build, n.project IS NOT NULL, coalesce(n.through, true)
FROM stamps s LEFT JOIN fingerprint_path_index p USING (project, build) LEFT JOIN named n USING (project, build)
WHERE p.project IS NULL OR p.rows <> s.rows OR p.last_id <> s.last_id OR n.project IS NOT NULL
ORDER BY s.project, s.build)sql";
  auto result = session.run("reading the index by path", sql, {hash_array(hashes)});
  if (!result) {
    return std::nullopt; // no index yet (or out of reach): every build is read
  }
  return found_builds(result->get());
}

Expected<bool>
PostgresStore::refresh_index_pack() const
{
  if (!m_has_schema) {
    return false;
  }
  const Session session(m_connection->conn, m_location);
  // The table first: it is made outside the transaction below, in which a
  // failed statement would end it.
  if (auto made = postgresql::run_making_table(session,
                                               "making the index by path",
                                               "SELECT 1 FROM fingerprint_path_index_mark LIMIT 0",
                                               {},
                                               k_path_index_table);
      !made) {
    return made.error();
  }
  // The mark first, then the builds: every event at or below it is
  // committed, so read below.
  auto mark = session.transaction("marking the index by path", [&]() -> Expected<std::string> {
    if (auto locked = session.run("marking the index by path", "LOCK TABLE fingerprint_events IN SHARE MODE");
        !locked) {
      return locked.error();
    }
    auto highest = session.run("marking the index by path", "SELECT coalesce(max(id), 0) FROM fingerprint_events");
    if (!highest) {
      return highest.error();
    }
    return std::string(PQgetvalue(highest->get(), 0, 0));
  });
  if (!mark) {
    return mark.error();
  }
  // The stamps before the builds: one changed meanwhile has a newer stamp
  // than its row says, and is read whatever the path.
  m_build_stamps.reset();
  std::vector<std::string> projects;
  std::vector<std::string> builds;
  std::vector<std::string> counts;
  std::vector<std::string> last_ids;
  std::vector<std::string> path_hashes;
  std::vector<std::string> input_hashes;
  std::unordered_map<std::string, std::optional<std::vector<uint64_t>>> named; // manifest -> its inputs' hashes
  std::optional<std::string> failure;
  (void)build_stamp({}); // reads every build's stamp
  // A build not indexed: a row of stamp -1, read whatever the path.
  auto unread = [&](const BuildRef& build) {
    projects.push_back(build.project);
    builds.push_back(build.build);
    counts.push_back("-1");
    last_ids.push_back("-1");
    path_hashes.push_back("{}");
    input_hashes.push_back("{}");
  };
  auto read = for_each_build({}, [&](const BuildRef& build, LogContents& index) {
    const auto stamp = build_stamp(build);
    if (!stamp || !index.problems.empty()) {
      unread(build);
      return;
    }
    std::vector<uint64_t> own;
    std::vector<uint64_t> inputs;
    bool whole = true;
    for (const Event& event : index.events) {
      own.push_back(path_hash(event.path));
      if (event.event != EventKind::produced || event.inputs.empty()) {
        continue;
      }
      auto [it, first] = named.try_emplace(event.inputs);
      if (first) {
        auto key = parse_digest_key(event.inputs);
        auto bytes = key ? read_manifest_bytes(*key) : Expected<std::optional<std::string>>(key.error());
        ManifestColumns columns;
        if (bytes && *bytes && decode_manifest_columns(**bytes, event.inputs, columns)) {
          std::vector<uint64_t> hashes;
          for (size_t i = 0; i < columns.size(); ++i) {
            hashes.push_back(path_hash(columns.path(i)));
          }
          it->second = std::move(hashes);
        }
      }
      if (!it->second) {
        whole = false;
        break;
      }
      inputs.insert(inputs.end(), it->second->begin(), it->second->end());
    }
    if (!whole) {
      unread(build);
      return;
    }
    projects.push_back(build.project);
    builds.push_back(build.build);
    counts.push_back(std::to_string(stamp->size));
    last_ids.push_back(std::to_string(stamp->inode));
    path_hashes.push_back(hash_array(own));
    input_hashes.push_back(hash_array(inputs));
  });
  if (!read) {
    return read.error();
  }
  auto written = session.transaction("writing the index by path", [&]() -> Expected<bool> {
    if (auto emptied = session.run("writing the index by path", "DELETE FROM fingerprint_path_index"); !emptied) {
      return emptied.error();
    }
    const char* insert = R"sql(
INSERT INTO fingerprint_path_index (project, build, rows, last_id, paths, inputs)
SELECT project, build, rows, last_id, paths::bigint[], inputs::bigint[]
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[])
  AS r(project, build, rows, last_id, paths, inputs))sql";
    if (auto inserted = session.run("writing the index by path",
                                    insert,
                                    {postgresql::text_array(projects),
                                     postgresql::text_array(builds),
                                     postgresql::text_array(counts),
                                     postgresql::text_array(last_ids),
                                     postgresql::text_array(path_hashes),
                                     postgresql::text_array(input_hashes)});
        !inserted) {
      return inserted.error();
    }
    if (auto unmarked = session.run("writing the index by path", "DELETE FROM fingerprint_path_index_mark");
        !unmarked) {
      return unmarked.error();
    }
    if (auto marked = session.run(
          "writing the index by path", "INSERT INTO fingerprint_path_index_mark VALUES ($1::bigint)", {*mark});
        !marked) {
      return marked.error();
    }
    return true;
  });
  if (!written) {
    return written.error();
  }
  // Its statistics now, so that a query looks a hash up in the GIN indexes;
  // and vacuumed: the rows just deleted are otherwise still found through
  // those indexes and checked by each `history` until autovacuum comes,
  // 17 ms a `history` instead of 4.5 on a store of a million artifacts
  // (tests/bench/million_bench.sh). Outside the transaction, as VACUUM must be.
  if (auto analyzed = session.run("writing the index by path", "VACUUM (ANALYZE) fingerprint_path_index"); !analyzed) {
    return analyzed.error();
  }
  return true;
}

} // namespace fingerprint::store
