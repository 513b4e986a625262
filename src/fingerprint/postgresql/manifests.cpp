#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>

#include <cstdlib>
#include <set>

// Input manifests in the database (schema version 2): each manifest's bytes
// in fingerprint_manifests, its entries in fingerprint_manifest_entries (the
// reverse index), and a produced event's `inputs` column naming the manifest
// it was made from (its "users", which a directory store lists in the
// manifest's own log).

namespace fingerprint::store {

using postgresql::Session;

Expected<bool>
PostgresStore::put_manifest(const DigestKey& key, const std::string& encoded, const Manifest& manifest, Warnings*) const
{
  if (!m_has_schema) {
    return Error{m_location + ": store not opened for writing"};
  }
  if (manifest.algorithm != key.algorithm) {
    return Error{m_location + ": manifest " + key.str() + " holds digests of another algorithm; nothing was recorded"};
  }
  postgresql::ManifestRows rows;
  rows.add(key, encoded, manifest);
  auto made = rows.insert(Session(m_connection->conn, m_location), "storing input manifest " + key.str());
  if (!made) {
    return made.error();
  }
  return *made == 1;
}

Expected<size_t>
PostgresStore::remove_unused_manifests(const std::vector<DigestKey>& keys, bool dry_run) const
{
  if (!m_has_schema || keys.empty()) {
    return size_t{0};
  }
  std::vector<std::string> digests;
  digests.reserve(keys.size());
  for (const auto& key : keys) {
    digests.push_back(key.str());
  }
  // The entries go with their manifest (ON DELETE CASCADE), in the same
  // statement: a manifest the database has is listed whole.
  // A dry run removed no event: what it would remove is every one of them
  // the database has.
  const char* sql = dry_run ? "SELECT count(*) FROM fingerprint_manifests m WHERE m.digest = ANY($1::text[])"
                            : "WITH gone AS (DELETE FROM fingerprint_manifests m WHERE m.digest = ANY($1::text[]) AND "
                              "NOT EXISTS (SELECT 1 FROM fingerprint_events e WHERE e.inputs = m.digest) RETURNING 1) "
                              "SELECT count(*) FROM gone";
  auto result = Session(m_connection->conn, m_location)
                  .run("removing input manifests no event names", sql, {postgresql::text_array(digests)});
  if (!result) {
    return result.error();
  }
  return static_cast<size_t>(std::strtoull(PQgetvalue(result->get(), 0, 0), nullptr, 10));
}

void
PostgresStore::keep_manifests(PGresult* rows) const
{
  if (!m_all_manifests) {
    m_all_manifests.emplace();
  }
  m_all_manifests->reserve(m_all_manifests->size() + static_cast<size_t>(PQntuples(rows)));
  for (int row = 0; row < PQntuples(rows); ++row) {
    m_all_manifests->emplace(std::string(PQgetvalue(rows, row, 0), static_cast<size_t>(PQgetlength(rows, row, 0))),
                             std::string(PQgetvalue(rows, row, 1), static_cast<size_t>(PQgetlength(rows, row, 1))));
  }
}

Expected<std::optional<std::string>>
PostgresStore::read_manifest_bytes(const DigestKey& key) const
{
  if (!m_has_schema) {
    return std::optional<std::string>();
  }
  if (m_whole_store_read && !m_every_manifest_read) {
    auto all = Session(m_connection->conn, m_location)
                 .run_binary("reading the input manifests", "SELECT digest, bytes FROM fingerprint_manifests");
    if (!all) {
      return all.error();
    }
    keep_manifests(all->get());
    m_every_manifest_read = true;
  }
  if (m_all_manifests) {
    if (auto found = m_all_manifests->find(key.str()); found != m_all_manifests->end()) {
      return std::optional<std::string>(found->second);
    }
  }
  auto result = Session(m_connection->conn, m_location)
                  .run("reading input manifest " + key.str(),
                       "SELECT encode(bytes, 'hex') FROM fingerprint_manifests WHERE digest = $1",
                       {key.str()});
  if (!result) {
    return result.error();
  }
  if (PQntuples(result->get()) == 0) {
    return std::optional<std::string>();
  }
  auto bytes = postgresql::bytes_of_hex(PQgetvalue(result->get(), 0, 0));
  if (!bytes) {
    return Error{m_location + ": input manifest " + key.str() + ": its bytes do not read back"};
  }
  return std::optional<std::string>(std::move(*bytes));
}

Expected<std::optional<Manifest>>
PostgresStore::read_manifest(const DigestKey& key) const
{
  auto bytes = read_manifest_bytes(key);
  if (!bytes) {
    return bytes.error();
  }
  if (!*bytes) {
    return std::optional<Manifest>();
  }
  const std::string where = m_location + ": input manifest " + key.str();
  auto manifest = decode_manifest(**bytes, where);
  if (!manifest) {
    return manifest.error();
  }
  if (manifest->algorithm != key.algorithm) {
    return Error{where + ": holds a manifest of another digest algorithm"};
  }
  return std::optional<Manifest>(std::move(*manifest));
}

Expected<std::vector<DigestKey>>
PostgresStore::find_by_prefix(digest::Algorithm algorithm, std::string_view prefix, size_t limit) const
{
  std::vector<DigestKey> keys;
  if (!m_has_schema) {
    return keys;
  }
  // A range of the "C"-collated columns' indexes: every digest that begins
  // with the prefix sorts before the prefix and a 'g', which no hex digit is.
  const std::string low = std::string(digest::algorithm_name(algorithm)) + ":" + std::string(prefix);
  const std::string query = "SELECT log FROM fingerprint_events WHERE logged AND log >= $1 AND log < $2 "
                            "UNION SELECT input FROM fingerprint_manifest_entries WHERE input >= $1 AND input < $2 "
                            "ORDER BY 1 LIMIT "
                            + std::to_string(limit);
  auto result = Session(m_connection->conn, m_location)
                  .run("finding the artifacts whose digest begins with " + low, query.c_str(), {low, low + "g"});
  if (!result) {
    return result.error();
  }
  for (int row = 0; row < PQntuples(result->get()); ++row) {
    if (auto key = parse_digest_key(PQgetvalue(result->get(), row, 0)); key && key->algorithm == algorithm) {
      keys.push_back(std::move(*key));
    }
  }
  return keys;
}

Expected<std::vector<ManifestUse>>
PostgresStore::find_manifest_uses(const DigestKey& input, std::vector<LogProblem>& problems) const
{
  std::vector<ManifestUse> uses;
  if (!m_has_schema) {
    return uses;
  }
  auto result = Session(m_connection->conn, m_location)
                  .run("finding the input manifests of " + input.str(),
                       "SELECT m.digest FROM fingerprint_manifest_entries x JOIN fingerprint_manifests m ON "
                       "m.id = x.manifest WHERE x.input = $1 ORDER BY x.manifest, x.position",
                       {input.str()});
  if (!result) {
    return result.error();
  }
  return postgresql::manifest_uses(*result, 0, PQntuples(result->get()), 0, problems);
}

} // namespace fingerprint::store
