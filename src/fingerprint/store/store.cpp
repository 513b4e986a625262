#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/store.hpp>

namespace fingerprint::store {

namespace {

DatabaseOpener g_database_opener = nullptr;

} // namespace

void
set_database_opener(DatabaseOpener opener)
{
  g_database_opener = opener;
}

bool
is_database_url(std::string_view location)
{
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

Expected<std::unique_ptr<Store>>
open_store(const std::string& location, Access access)
{
  if (is_database_url(location)) {
    if (g_database_opener == nullptr) {
      // The URL may hold a password: name the scheme only.
      return Error{location.substr(0, location.find("://") + 3)
                   + "...: this fingerprint has no PostgreSQL store: install fingerprint-postgresql beside it "
                     "(it is built with the runner when libpq is found)"};
    }
    // A database never written to has no tables to change: reading it
    // creates none, and its rows can be deleted over the same connection.
    return g_database_opener(location, access == Access::update ? Access::read : access);
  }
  auto store = access == Access::write    ? DirectoryStore::open_for_writing(location)
               : access == Access::update ? DirectoryStore::open_for_updating(location)
                                          : DirectoryStore::open_for_reading(location);
  if (!store) {
    return store.error();
  }
  return std::unique_ptr<Store>(std::make_unique<DirectoryStore>(std::move(*store)));
}

Expected<bool>
Store::append_call(const std::string& /*call*/, const std::vector<Event>& events, Warnings* warnings) const
{
  if (auto appended = append(events, warnings); !appended) {
    return appended.error();
  }
  return true;
}

Expected<bool>
Store::put_manifest(const DigestKey&, const std::string&, const Manifest&, Warnings*) const
{
  return Error{location() + ": this store keeps no input manifests"};
}

Expected<std::map<std::string, LogContents>>
Store::read_logs(const std::vector<DigestKey>& keys) const
{
  std::map<std::string, LogContents> logs;
  for (const DigestKey& key : keys) {
    auto log = read_log(key);
    if (!log) {
      return log.error();
    }
    logs[key.str()] = std::move(*log);
  }
  return logs;
}

Expected<std::optional<Manifest>>
Store::read_manifest(const DigestKey&) const
{
  return std::optional<Manifest>();
}

Expected<std::optional<std::string>>
Store::read_manifest_bytes(const DigestKey& key) const
{
  auto manifest = read_manifest(key);
  if (!manifest) {
    return manifest.error();
  }
  if (!*manifest) {
    return std::optional<std::string>();
  }
  normalize(**manifest);
  return std::optional<std::string>(encode(**manifest));
}

Expected<bool>
Store::read_manifest_columns(const DigestKey& key, ManifestColumns& columns) const
{
  auto bytes = read_manifest_bytes(key);
  if (!bytes) {
    return bytes.error();
  }
  if (!*bytes) {
    return false;
  }
  // Its error goes unused (read_manifest() says what is wrong, naming the
  // file), so no name is made for it per manifest.
  if (decode_manifest_columns(**bytes, std::string(), columns) && columns.algorithm == key.algorithm) {
    return true;
  }
  auto manifest = read_manifest(key);
  if (!manifest) {
    return manifest.error();
  }
  if (!*manifest) {
    return false;
  }
  columns = columns_of_manifest(**manifest);
  return true;
}

Expected<bool>
Store::put_provenance(const BuildRef&, const std::string&) const
{
  return Error{location() + ": this store keeps no build provenance"};
}

Expected<std::optional<std::string>>
Store::read_provenance(const BuildRef&) const
{
  return std::optional<std::string>();
}

Expected<bool>
Store::remove_provenance(const BuildRef&, bool) const
{
  return false;
}

Expected<std::vector<DigestKey>>
Store::find_by_prefix(digest::Algorithm /*algorithm*/, std::string_view /*prefix*/, size_t /*limit*/) const
{
  return std::vector<DigestKey>();
}

Expected<std::vector<ManifestUse>>
Store::find_manifest_uses(const DigestKey&, std::vector<LogProblem>&) const
{
  return std::vector<ManifestUse>();
}

Expected<std::optional<std::string>>
Store::read_build_summaries() const
{
  return std::optional<std::string>();
}

Expected<bool>
Store::write_build_summaries(const std::string&) const
{
  return false;
}

std::optional<BuildStamp>
Store::build_stamp(const BuildRef&) const
{
  return std::nullopt;
}

Expected<MigrateReport>
Store::import_from(const Migration&, const std::function<void(size_t, size_t)>&) const
{
  return Error{location() + ": only a PostgreSQL store can be migrated into"};
}

} // namespace fingerprint::store
