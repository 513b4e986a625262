#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace fingerprint::digest {

// Remembers digests of files that have not changed since they were read,
// keyed by (device, inode, size, mtime ns, ctime ns) like ccache's and
// Bazel's caches. One small file per (algorithm, device, inode); writes go
// through a temporary name and rename(), so a reader sees an old entry or a
// new one, never half of one. Losing the cache loses nothing but time.
class DigestCache
{
public:
  // `directory` empty: no cache (every lookup misses, stores do nothing).
  explicit DigestCache(std::string directory);

  // The default location: $FINGERPRINT_CACHE_DIR, else
  // ${XDG_CACHE_HOME:-$HOME/.cache}/fingerprint. FINGERPRINT_CACHE_DIR set to
  // the empty string switches the cache off.
  static std::string default_directory();

  bool
  enabled() const
  {
    return !m_directory.empty();
  }

  std::optional<std::string> lookup(Algorithm algorithm, const FileIdentity& identity) const;

  // Stores `hex` for `identity`, computed from bytes read at `read_at_ns`,
  // unless the entry could not be trusted (see is_trustworthy).
  void store(Algorithm algorithm,
             const FileIdentity& identity,
             const std::string& hex,
             int64_t read_at_ns,
             int64_t granularity_ns) const;

  // A digest read within one timestamp tick of the file's last change cannot
  // be trusted: a second write in the same tick leaves mtime, ctime and size
  // as they were, so the entry would keep a stale digest (git's "racy" index
  // entries). Trusted only when the read happened at least one full tick
  // after the last change.
  static bool is_trustworthy(const FileIdentity& identity, int64_t read_at_ns, int64_t granularity_ns);

  // The timestamp granularity of the filesystem holding the open file `fd`:
  // 2 s on FAT, 1 s where timestamps carry no nanoseconds (ext3, NFSv3 and
  // unknown network filesystems), else the kernel's coarse clock tick, which
  // is what it stamps files with.
  static int64_t granularity_ns(int fd, const FileIdentity& identity);

private:
  std::string entry_path(Algorithm algorithm, const FileIdentity& identity) const;

  std::string m_directory;
};

} // namespace fingerprint::digest
