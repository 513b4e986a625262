#include <fingerprint/postgresql/schema.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace fingerprint::store::postgresql {

namespace {

// Each schema version is the SQL that takes a database from the version
// before it; k_migrations[0] creates version 1 from nothing. A new version
// appends a step here and raises k_schema_version; no step ever changes. A
// new column of k_event_fields is added by such a step (the conformance
// tests check that every column of that table exists).
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
  // 2: input manifests (store/manifest.hpp), and the produced events that
  // name theirs. Nothing is rewritten: the column's default is what rows
  // written before it hold (no manifest), and only new rows are indexed.
  R"sql(
CREATE TABLE fingerprint_manifests (
  digest text COLLATE "C" PRIMARY KEY, -- its name: "sha256:<hex>" of `bytes`
  id bigserial UNIQUE NOT NULL,        -- the order they were stored in (the directory's reverse index order)
  algorithm text NOT NULL,
  bytes bytea NOT NULL                 -- encode(): what its digest is of
);
-- The manifests' entries, one row each: the reverse index (which manifests
-- list an input, with what role), and what a consumer query reports of an
-- entry, without reading whole manifests (a system header is in thousands).
CREATE TABLE fingerprint_manifest_entries (
  manifest bigint NOT NULL REFERENCES fingerprint_manifests (id) ON DELETE CASCADE,
  position integer NOT NULL,    -- in the manifest's order
  input text COLLATE "C" NOT NULL, -- "sha256:<hex>"
  role "char" NOT NULL,         -- l(ink), c(ompile), i(nterface), d(eclared)
  size bigint NOT NULL,
  path bytea NOT NULL,          -- exact bytes (not always UTF-8)
  PRIMARY KEY (manifest, position)
);
CREATE INDEX fingerprint_manifest_entries_by_input ON fingerprint_manifest_entries (input, manifest, position);
ALTER TABLE fingerprint_events ADD COLUMN inputs text COLLATE "C" NOT NULL DEFAULT ''; -- produced: its manifest
-- In the log of its input manifest (`inputs`), as a directory store appends
-- it there too: the manifest's users, which gc removes from that log as
-- from the others (a row in none of its three places holds nothing).
ALTER TABLE fingerprint_events ADD COLUMN listed boolean NOT NULL DEFAULT false;
-- The users of a manifest (the products made from those inputs): its consumers.
CREATE INDEX fingerprint_events_by_inputs ON fingerprint_events (inputs, id) WHERE listed;
)sql",
};
static_assert(std::size(k_migrations) == k_schema_version);

// The record calls stored, by id (store/spool.hpp): a call journaled while
// the server was away is stored once, even when its deliverer died between
// the commit and the journal's unlink. Not a migration: older runners never
// read it, so it does not raise the schema version (which would lock them
// out); made by the first append_call that misses it.
constexpr const char* k_calls_table = R"sql(
CREATE TABLE IF NOT EXISTS fingerprint_calls (
  id text COLLATE "C" PRIMARY KEY,
  recorded timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS fingerprint_calls_by_time ON fingerprint_calls (recorded);
)sql";

} // namespace

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
  return session.transaction("creating the schema", [&]() -> Expected<bool> {
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
}

Expected<Result>
run_making_table(const Session& session,
                 std::string_view what,
                 const char* sql,
                 const std::vector<std::string>& params,
                 const char* table_sql)
{
  auto result = session.run(what, sql, params);
  if (result || session.last_state() != k_undefined_table) {
    return result;
  }
  const std::string making = "creating a table for " + std::string(what);
  auto made = session.transaction(making, [&]() -> Expected<bool> {
    if (auto locked = session.run(making, k_schema_lock); !locked) {
      return locked.error();
    }
    if (auto created = session.run(making, table_sql); !created) {
      return created.error();
    }
    return true;
  });
  if (!made) {
    return made.error();
  }
  return session.run(what, sql, params);
}

const char*
migration_sql(int version)
{
  return version >= 1 && version <= k_schema_version ? k_migrations[version - 1] : "";
}

std::string
column_value(const Event& event, const EventField& field)
{
  switch (field.type) {
    case FieldType::format:
      return std::to_string(event.v);
    case FieldType::kind:
      return std::string(event_kind_name(event.event));
    case FieldType::count:
      return std::to_string(event.*field.count);
    case FieldType::text:
    case FieldType::bytes: // none has a column: a path is in the line only, exactly (event.hpp)
      break;
  }
  return event.*field.text;
}

std::string_view
column_type(const EventField& field)
{
  return field.type == FieldType::format || field.type == FieldType::count ? "bigint" : "text";
}

const std::string&
event_columns()
{
  static const std::string k_columns = [] {
    std::string columns;
    for (const EventField& field : k_event_fields) {
      if (!field.column.empty()) {
        columns += (columns.empty() ? "" : ", ") + std::string(field.column);
      }
    }
    return columns;
  }();
  return k_columns;
}

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

Expected<StoredEvent>
row_for(const Event& event)
{
  auto stored = stored_form(event);
  if (!stored) {
    return stored.error();
  }
  if (auto fits = storable_in_database(stored->event); !fits) {
    return fits.error();
  }
  return stored;
}

namespace {

// INSERT INTO fingerprint_events (log, logged, indexed, <event columns>, line)
// SELECT ... FROM unnest($1::text[], $2::boolean[], ...): one statement for
// a whole batch of rows.
std::string
insert_statement()
{
  std::string casts = "$1::text[], $2::boolean[]";
  int parameter = 2;
  for (const EventField& field : k_event_fields) {
    if (!field.column.empty()) {
      casts += ", $" + std::to_string(++parameter) + "::" + std::string(column_type(field)) + "[]";
    }
  }
  casts += ", $" + std::to_string(++parameter) + "::text[]";
  // Only the row in the product's own log is in its manifest's log too (an
  // installed copy's link names none).
  return "INSERT INTO fingerprint_events (log, logged, indexed, listed, " + event_columns()
         + ", line)\nSELECT log, true, indexed, inputs <> '' AND log = digest, " + event_columns()
         + ", line\nFROM unnest(" + casts + ") AS r(log, indexed, " + event_columns() + ", line)";
}

} // namespace

void
Rows::add(const std::string& log, const Event& event, std::string line)
{
  m_log.push_back(log);
  m_indexed.push_back(event.digest == log);
  size_t column = 0;
  for (const EventField& field : k_event_fields) {
    if (field.column.empty()) {
      continue;
    }
    if (column == m_columns.size()) {
      m_columns.emplace_back();
    }
    m_columns[column++].push_back(column_value(event, field));
  }
  m_line.push_back(std::move(line));
}

Expected<bool>
Rows::insert_call(const Session& session, std::string_view what, const std::string& call) const
{
  if (m_log.empty()) {
    return true;
  }
  // One statement still: the call's id and its rows land together, and a
  // call already stored inserts nothing. A second deliverer of the same
  // call waits on the id's index entry until the first commits or aborts.
  // The same statement forgets ids older than k_call_id_days (a few of the
  // oldest each time, skipping any another writer is forgetting): an index
  // probe that finds nothing, most of the time.
  static const std::string k_insert = [] {
    const auto columns = std::count_if(std::begin(k_event_fields),
                                       std::end(k_event_fields),
                                       [](const EventField& field) { return !field.column.empty(); });
    // After insert_statement()'s parameters: log, indexed, the columns, line.
    return "WITH pruned AS (DELETE FROM fingerprint_calls WHERE id IN (SELECT id FROM fingerprint_calls WHERE "
           "recorded < now() - interval '"
           + std::to_string(k_call_id_days)
           + " days' ORDER BY recorded LIMIT 20 FOR UPDATE SKIP LOCKED)),\n"
             "call AS (INSERT INTO fingerprint_calls (id) VALUES ($"
           + std::to_string(columns + 4) + ") ON CONFLICT DO NOTHING RETURNING id)\n" + insert_statement()
           + "\nWHERE EXISTS (SELECT FROM call)";
  }();
  std::vector<std::string> params = {text_array(m_log), bool_array(m_indexed)};
  for (const auto& column : m_columns) {
    params.push_back(text_array(column));
  }
  params.push_back(text_array(m_line));
  params.push_back(call);
  // The first call with an id in this database makes the table.
  auto inserted = run_making_table(session, what, k_insert.c_str(), params, k_calls_table);
  if (!inserted) {
    return inserted.error();
  }
  return std::string_view(PQcmdTuples(inserted->get())) != "0";
}

Expected<void>
Rows::insert(const Session& session, std::string_view what) const
{
  if (m_log.empty()) {
    return {};
  }
  static const std::string k_insert = insert_statement();
  std::vector<std::string> params = {text_array(m_log), bool_array(m_indexed)};
  for (const auto& column : m_columns) {
    params.push_back(text_array(column));
  }
  params.push_back(text_array(m_line));
  if (auto inserted = session.run(what, k_insert.c_str(), params); !inserted) {
    return inserted.error();
  }
  return {};
}

std::vector<ManifestUse>
manifest_uses(const Result& result, int first, int last, int column, std::vector<LogProblem>& problems)
{
  std::vector<ManifestUse> uses;
  std::set<std::string> seen;
  for (int row = first; row < last; ++row) {
    const std::string digest = PQgetvalue(result.get(), row, column);
    auto key = parse_digest_key(digest);
    if (!key) {
      problems.push_back(
        {"fingerprint_manifest_entries", 0, "input manifest '" + digest + "': " + key.error().message});
      continue;
    }
    if (seen.insert(digest).second) {
      uses.push_back({std::move(*key)});
    }
  }
  return uses;
}

void
ManifestRows::add(const DigestKey& key, const std::string& encoded, const Manifest& manifest)
{
  const std::string digest = key.str();
  if (!m_added.insert(digest).second) {
    return; // both copies would claim its entries
  }
  m_digest.push_back(digest);
  m_algorithm.emplace_back(digest::algorithm_name(key.algorithm));
  m_bytes.push_back(hex_of(encoded));
  const std::string prefix = std::string(digest::algorithm_name(manifest.algorithm)) + ":";
  for (size_t position = 0; position < manifest.entries.size(); ++position) {
    const ManifestEntry& entry = manifest.entries[position];
    m_entry_manifest.push_back(digest);
    m_entry_position.push_back(std::to_string(position));
    m_entry_input.push_back(prefix + entry.hex);
    m_entry_role.emplace_back(1, static_cast<char>(entry.role));
    m_entry_size.push_back(std::to_string(entry.size));
    m_entry_path.push_back(hex_of(entry.path));
  }
}

Expected<size_t>
ManifestRows::insert(const Session& session, std::string_view what) const
{
  if (m_digest.empty()) {
    return size_t{0};
  }
  // The entries go in only with a manifest this statement made: one that
  // was there has its own. A second writer of the same manifest waits on
  // the first's key, then finds it (ON CONFLICT DO NOTHING).
  static constexpr const char* k_insert = R"sql(
WITH made AS (
  INSERT INTO fingerprint_manifests (digest, algorithm, bytes)
  SELECT r.digest, r.algorithm, decode(r.bytes, 'hex') FROM unnest($1::text[], $2::text[], $3::text[]) AS r(digest, algorithm, bytes)
  ON CONFLICT DO NOTHING
  RETURNING digest, id
), entries AS (
  INSERT INTO fingerprint_manifest_entries (manifest, position, input, role, size, path)
  SELECT made.id, r.position, r.input, r.role, r.size, decode(r.path, 'hex')
  FROM unnest($4::text[], $5::integer[], $6::text[], $7::"char"[], $8::bigint[], $9::text[])
    AS r(manifest, position, input, role, size, path)
  JOIN made ON made.digest = r.manifest
)
SELECT count(*) FROM made)sql";
  auto inserted = session.run(what,
                              k_insert,
                              {text_array(m_digest),
                               text_array(m_algorithm),
                               text_array(m_bytes),
                               text_array(m_entry_manifest),
                               text_array(m_entry_position),
                               text_array(m_entry_input),
                               text_array(m_entry_role),
                               text_array(m_entry_size),
                               text_array(m_entry_path)});
  if (!inserted) {
    return inserted.error();
  }
  return static_cast<size_t>(std::atoll(PQgetvalue(inserted->get(), 0, 0)));
}

} // namespace fingerprint::store::postgresql
