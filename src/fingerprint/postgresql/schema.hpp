#pragma once

// What the PostgreSQL store's tables are: the schema and its migrations,
// and the columns of an event's row (k_event_fields). Private to
// postgresql/.

#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/manifest.hpp>

#include <string>
#include <unordered_set>
#include <vector>

namespace fingerprint::store::postgresql {

// Any number, the same in every runner: serializes creating and migrating
// the schema, and concurrent imports.
inline constexpr const char* k_schema_lock = "SELECT pg_advisory_xact_lock(7046529851223360001)";
inline constexpr const char* k_import_lock = "SELECT pg_advisory_xact_lock(7046529851223360002)";

// How long fingerprint_calls keeps a call's id (README): a journaled call
// delivered later than this after a copy of it landed may be stored twice.
inline constexpr int k_call_id_days = 30;

// SQLSTATE undefined_table: a table made on first use is not there yet.
inline constexpr const char* k_undefined_table = "42P01";

// Runs `sql`; when a table it names is missing, makes `table_sql` (CREATE
// TABLE IF NOT EXISTS ..., under the schema's lock, so racing writers make
// it once) and runs `sql` again. For the tables that are no schema step
// (fingerprint_calls, fingerprint_provenance, fingerprint_build_summaries):
// older runners never read them, and a new schema version would lock them out.
Expected<Result> run_making_table(const Session& session,
                                  std::string_view what,
                                  const char* sql,
                                  const std::vector<std::string>& params,
                                  const char* table_sql);

// Creates or migrates the schema; false when reading a database without one.
Expected<bool> ensure_schema(const Session& session, Access access);

// The SQL of schema step `version` (1 creates version 1 from nothing), for
// tests that make a database as an older runner left it.
const char* migration_sql(int version);

// A field's value as its column holds it.
std::string column_value(const Event& event, const EventField& field);

// The SQL type of a field's column.
std::string_view column_type(const EventField& field);

// "kind, digest, ...": the event columns of fingerprint_events, in
// k_event_fields order.
const std::string& event_columns();

// The line of a new event and the event as it reads back from it, refused
// when a column cannot hold it.
Expected<StoredEvent> row_for(const Event& event);

// The event in a row's `line`, parsed as the directory store parses its
// lines, added to `into` (or, when unreadable, the problem, naming row `id`).
void parse_row(const char* id, const char* line, LogContents& into);

// The columns of rows to insert.
class Rows
{
public:
  // `event` as it reads back from `line` (stored_form), in the log of `log`.
  void add(const std::string& log, const Event& event, std::string line);

  size_t
  size() const
  {
    return m_log.size();
  }

  // One statement for every row: they land together or not at all.
  Expected<void> insert(const Session& session, std::string_view what) const;

  // insert() as record call `call` (fingerprint_calls, made on first use;
  // ids older than k_call_id_days are forgotten): false, and nothing
  // inserted, when that call is stored already.
  Expected<bool> insert_call(const Session& session, std::string_view what, const std::string& call) const;

private:
  std::vector<std::string> m_log;
  std::vector<bool> m_indexed;
  std::vector<std::vector<std::string>> m_columns; // per column of event_columns()
  std::vector<std::string> m_line;
};

// The manifests in rows [first, last) of `result`, whose column `column`
// holds a manifest's digest, each once, in row order (as a directory
// store's reverse index reads); rows that do not read are appended to
// `problems`.
std::vector<ManifestUse> manifest_uses(const Result& result,
                                       int first,
                                       int last,
                                       int column,
                                       std::vector<LogProblem>& problems);

// Input manifests to store (fingerprint_manifests and their entries), each
// unless the database has it.
class ManifestRows
{
public:
  // `encoded` is what `key` is the digest of, `manifest` what it decodes to;
  // a key added twice is stored once.
  void add(const DigestKey& key, const std::string& encoded, const Manifest& manifest);

  size_t
  size() const
  {
    return m_digest.size();
  }

  size_t
  entries() const
  {
    return m_entry_manifest.size();
  }

  // One statement: each manifest lands with all of its entries, or not at
  // all. Returns how many were new (the rest the database had).
  Expected<size_t> insert(const Session& session, std::string_view what) const;

private:
  std::unordered_set<std::string> m_added;
  std::vector<std::string> m_digest;
  std::vector<std::string> m_algorithm;
  std::vector<std::string> m_bytes; // hex
  std::vector<std::string> m_entry_manifest;
  std::vector<std::string> m_entry_position;
  std::vector<std::string> m_entry_input;
  std::vector<std::string> m_entry_role;
  std::vector<std::string> m_entry_size;
  std::vector<std::string> m_entry_path; // hex
};

} // namespace fingerprint::store::postgresql
