#pragma once

// Where a file no fingerprinted build made came from: the Debian package
// that owns it, from dpkg's database (the *.list file of every installed
// package and the status file with their versions), read once into a
// sorted index in the cache directory and looked up there by binary search
// until the database changes.

#include <fingerprint/util/expected.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::query {

struct PackageOrigin
{
  std::string package;      // "libc6"
  std::string architecture; // "amd64", "all"; "" when dpkg names none
  std::string version;      // "2.36-9+deb12u7"
  std::string path;         // the path as the package lists it ("/lib/x86_64-linux-gnu/libc.so.6")

  bool operator==(const PackageOrigin&) const = default;
};

class PackageIndex
{
public:
  // The index of dpkg's database at `admin_dir` (/var/lib/dpkg), from the
  // index in `cache_dir` made for the database as it is now, else made
  // there (and older indexes removed). No database (not a Debian system):
  // an index that finds nothing. A cache directory that cannot be written
  // is not an error: the index is then kept in memory for this process.
  static Expected<PackageIndex> open(const std::string& admin_dir, const std::string& cache_dir);

  // The package that owns the file at `path` (absolute). Debian 12 merges
  // /bin, /sbin and /lib into /usr, while packages list either spelling: a
  // path is also looked up under the other one, and as its symbolic links
  // resolve.
  std::optional<PackageOrigin> owner(const std::string& path) const;

  // Whether the index was read from the cache rather than made now.
  bool
  cached() const
  {
    return m_cached;
  }

  // The index file's bytes for a database, for tests: one line per path,
  // "<path>\t<package>\t<architecture>\t<version>\n", sorted by path.
  static Expected<std::string> make_index(const std::string& admin_dir);

private:
  std::optional<PackageOrigin> exact(std::string_view path) const;

  std::shared_ptr<const void> m_keep; // what holds the index's bytes (a mapping of the file)
  std::string_view m_view;            // the index's bytes
  bool m_cached = false;
};

} // namespace fingerprint::query
