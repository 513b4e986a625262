#pragma once

#include <fingerprint/store/store.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

struct pg_result; // libpq's PGresult

namespace fingerprint::store {

// Lets open_store() open postgresql:// URLs (store.hpp).
void enable_postgresql();

// The schema version this runner creates and migrates to (README,
// "A PostgreSQL store, for build fleets"). A database at a newer version is
// refused, so a table that older runners never touch (fingerprint_calls) is
// no new version: it is made on first use (schema.cpp), and an older runner
// still writes beside a newer one during a rolling upgrade.
inline constexpr int k_schema_version = 2;

// The PostgreSQL store: one row per event and log, through libpq.
//
// Each row keeps the event's line exactly as the directory store writes it,
// beside the columns the queries use (the log it is in, the build, the
// consumer's product, a product's input manifest), so both backends read
// the same events back through the same parser. Input manifests are rows of
// their own (manifests.cpp); a manifest's "log" (its users, which a
// directory store appends to it) is the produced events whose `inputs`
// column names it. One connection per process; every call is one statement
// or one transaction, so a `record` lands whole or not at all.
class PostgresStore final : public Store
{
public:
  ~PostgresStore() override;

  // Connects (timeouts: 5 s to connect, 10 s for a lock, 60 s for a
  // statement, unless the URL sets connect_timeout or options) and checks the schema: with Access::write it is
  // created or migrated to k_schema_version; with Access::read a database
  // without it reads as an empty store. A server that cannot be reached (no
  // answer, refused, starting or shutting down) is an Error marked
  // `unavailable`; one that answers and refuses us (a password, a missing
  // database) is not.
  static Expected<std::unique_ptr<PostgresStore>> open(const std::string& url, Access access);

  // Whether a store, when destroyed, keeps its connection for the next
  // open() of the same URL in the same environment (the query server's
  // calls: runner/query_client.hpp). A kept connection is used again only
  // if it is still open, idle, and its first statement (the schema's
  // version) succeeds; else it is closed and a new one made. Statements
  // with parameters are then prepared once a connection (session.hpp,
  // prepare_statements). Off by default: a command's process connects
  // once and closes at its end.
  static void keep_connections(bool keep);

  // `url` with any password replaced by "***", for messages.
  static std::string mask_password(std::string_view url);

  const std::string& location() const override;
  bool
  exists() const override
  {
    return m_has_schema;
  }
  Expected<void> append(const std::vector<Event>& events, Warnings* warnings = nullptr) const override;
  Expected<bool> append_call(const std::string& call,
                             const std::vector<Event>& events,
                             Warnings* warnings = nullptr) const override;
  Expected<void> append_link(const DigestKey& log, const Event& event, Warnings* warnings = nullptr) const override;
  Expected<LogContents> read_log(const DigestKey& key) const override;
  Expected<std::map<std::string, LogContents>> read_logs(const std::vector<DigestKey>& keys) const override;
  Expected<bool> put_manifest(const DigestKey& key,
                              const std::string& encoded,
                              const Manifest& manifest,
                              Warnings* warnings = nullptr) const override;
  Expected<std::optional<Manifest>> read_manifest(const DigestKey& key) const override;
  Expected<std::optional<std::string>> read_manifest_bytes(const DigestKey& key) const override;
  Expected<bool> put_provenance(const BuildRef& build, const std::string& document) const override;
  Expected<std::optional<std::string>> read_provenance(const BuildRef& build) const override;
  Expected<bool> remove_provenance(const BuildRef& build, bool dry_run) const override;
  Expected<std::optional<std::string>> read_build_summaries() const override;
  bool
  keeps_build_summaries() const override
  {
    return true;
  }
  Expected<bool> write_build_summaries(const std::string& text) const override;
  std::optional<BuildStamp> build_stamp(const BuildRef& build) const override;
  // fingerprint_path_index (paths.cpp): written by gc; a build whose stamp
  // changed since, or that has no row, is read whatever the path.
  std::optional<BuildsAtPaths> builds_at_paths(const std::vector<std::string>& paths) const override;
  Expected<bool> refresh_index_pack() const override;
  Expected<std::vector<ManifestUse>> find_manifest_uses(const DigestKey& input,
                                                        std::vector<LogProblem>& problems) const override;
  Expected<std::vector<DigestKey>> find_by_prefix(digest::Algorithm algorithm,
                                                  std::string_view prefix,
                                                  size_t limit) const override;
  Expected<std::string> read_raw_log(const DigestKey& key) const override;
  Expected<std::vector<BuildRef>> list_builds() const override;
  Expected<LogContents> read_build(const BuildRef& build) const override;
  Expected<void> for_each_build(const std::string& project, const BuildVisitor& each) const override;
  Expected<void> for_each_build_of(const std::vector<BuildRef>& builds, const BuildVisitor& each) const override;
  Expected<size_t> remove_unused_manifests(const std::vector<DigestKey>& keys, bool dry_run) const override;
  Expected<CompactionResult> remove_events(const DigestKey& key, const EventFilter& drop, bool dry_run) const override;
  Expected<CompactionResult> remove_build_events(const BuildRef& build,
                                                 const EventFilter& drop,
                                                 bool dry_run) const override;
  Expected<FsckReport> fsck(const FsckOptions& options) const override;
  Expected<ArtifactRecord> load_artifact(const DigestKey& key) const override;
  Expected<std::vector<ConsumerHit>> find_consumers(const DigestKey& key,
                                                    bool transitive,
                                                    std::vector<LogProblem>& problems) const override;
  Expected<std::vector<Event>> find_chain(const DigestKey& from,
                                          const DigestKey& to,
                                          std::vector<LogProblem>& problems) const override;

  Expected<MigrateReport> import_from(const Migration& migration,
                                      const std::function<void(size_t, size_t)>& progress) const override;

  struct Connection;

private:
  PostgresStore(std::string location, std::unique_ptr<Connection> connection, bool has_schema, std::string kept_as);
  // Adds rows of (digest, bytes) to m_all_manifests (manifests.cpp).
  void keep_manifests(pg_result* rows) const;

  std::string m_location;
  std::unique_ptr<Connection> m_connection;
  std::string m_kept_as;     // with keep_connections: the connection's key, to keep it under at the end
  bool m_has_schema = false; // false: reading a database we never wrote to
  // Set by a read of every build: the manifests are then read all at once
  // (one statement, not one a manifest), at the first that is asked for.
  // Content-addressed: a copy is never out of date, and one added since is
  // read by itself. for_each_build_of() adds those of the builds it reads.
  mutable bool m_whole_store_read = false;
  // Set by a read of every build or of the builds summary: the provenance
  // of every build is then read in one statement (summaries.cpp).
  mutable bool m_every_build_read = false;
  // Every build's stamp (summaries.cpp), read at the first asked for after
  // the builds summary is read: project '\0' build -> (rows, highest id).
  // Each pass over the summary reads it first, so no copy outlives a pass.
  mutable std::optional<std::unordered_map<std::string, BuildStamp>> m_build_stamps;
  mutable std::optional<std::unordered_map<std::string, std::string>> m_all_manifests; // "sha256:<hex>" -> bytes
  mutable bool m_every_manifest_read = false; // it holds them all, not only some builds'
  // So is every build's provenance, after a read of every build or of the
  // builds summary (`builds` asked for it one statement a
  // build: 10,000 round trips at 1,000,000 artifacts). A build's document
  // is written once; any change this process makes to the table forgets
  // the copies.
  mutable std::optional<std::unordered_map<std::string, std::string>> m_all_provenance; // project '\0' build
  // The table is made by the first build that records provenance; until
  // then each read failed, and wrote an error to the server's log.
  mutable bool m_no_provenance_table = false;
};

} // namespace fingerprint::store
