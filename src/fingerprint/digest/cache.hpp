#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace fingerprint::digest {

// Remembers digests of files that have not changed since they were read,
// keyed by (device, inode, size, mtime ns, ctime ns) like ccache's and
// Bazel's caches. One table per algorithm, `digests/<algorithm>.table`: a
// file of fixed-size slots. A lookup is one pread of the key's few slots (a
// link hook looks up a hundred headers or more; one file per entry cost an
// open, fstat, read and close each, and reading through a mapping faulted
// in pages that the exit then unmapped); a store writes through a shared
// mapping made by the process's first store. Slots are seqlocked and
// checksummed: a reader takes a slot only when its sequence was even and
// its checksum holds, so a concurrent writer, a writer that died mid-slot
// or a torn page after a power loss is a miss, never a wrong digest. Losing
// the cache loses nothing but time. The layout is in docs/ARCHITECTURE.md
// ("The digest cache").
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

  // From now on this process also keeps, in memory, every digest it finds in
  // or stores to a table, and looks there first: for the recorder, which
  // serves every link of a build (a header a hundred links read is then one
  // pread, not a hundred), and keeps each directory's tables open and
  // mapped from one DigestCache to the next while their names still name
  // them. Off by default: a process that hooks one link would only pay for
  // the copies.
  static void remember_in_process(bool on);

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

  // The table's layout, for tests and tools that read or plant entries.
  static constexpr uint64_t k_magic = 0x74736567'69647066; // "fpdigest" as a little-endian word
  static constexpr uint64_t k_version = 1;
  static constexpr size_t k_header_words = 8;
  static constexpr size_t k_key_words = 7;        // sequence, device, inode, size, mtime, ctime, checksum
  static constexpr uint64_t k_slot_count = 65536; // a power of two
  static constexpr size_t k_probe = 8;            // slots looked at from a key's home slot
  static uint64_t home_slot(const FileIdentity& identity);
  static uint64_t checksum(const FileIdentity& identity, const uint64_t* digest_words, size_t count);
  std::string table_path(Algorithm algorithm) const;

  struct Table;
  struct Tables;

private:
  // A new set of tables, or the process's kept one for `directory` while
  // remember_in_process is on.
  static std::shared_ptr<Tables> tables_of(const std::string& directory);
  // The table of `algorithm`, opened on first use, and made and mapped for
  // a store (`create`); null when there is none to be had (unwritable,
  // another user's, damaged).
  Table* table(Algorithm algorithm, bool create) const;
  static void write_slot(Table& table, const FileIdentity& identity, const uint64_t* digest, size_t words);
  std::optional<std::string> lookup_table(Algorithm algorithm, const FileIdentity& identity) const;

  std::string m_directory;
  std::shared_ptr<Tables> m_tables;
};

} // namespace fingerprint::digest
