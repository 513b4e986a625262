#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

using EVP_MD_CTX = struct evp_md_ctx_st;
struct SHA256state_st;

namespace fingerprint::digest {

// Files at least this large are mapped and hashed while a second thread
// prepares the mapping ahead (ReadStrategy::ahead); smaller ones are read
// into a buffer. One thread reading into buffers for another to hash
// measured slower than reading and hashing on one core (the buffers cross
// between cores' caches), and a plain mapping pays a page fault per 16 pages
// and munmap's TLB flush on the hashing core. Mapping ahead moves both to
// the otherwise idle core and hashes the page cache in place, without a
// copy. Measured with BM_DigestFile and tests/bench/compare.sh; see
// docs/ARCHITECTURE.md, "One large file".
inline constexpr uint64_t k_ahead_threshold = 16 * 1024 * 1024;

// The mapping is prepared and released in chunks of this size, at most
// k_ahead_window chunks ahead of the hasher.
inline constexpr uint64_t k_ahead_chunk = 1024 * 1024;
inline constexpr uint64_t k_ahead_window = 32;

// The hasher wakes the preparing thread once every this many chunks, not
// after each: a wake is a futex call and an interrupt of the other core,
// and one a chunk was 1.7% of the hasher's samples on a 1 GiB file. Less
// than k_ahead_window, so the thread is woken while it is still ahead.
inline constexpr uint64_t k_ahead_wake_every = 8;
static_assert(k_ahead_wake_every < k_ahead_window);

// Size of each read() on the buffered path. The copy into a buffer that
// stays in the first-level cache is hashed from there: 32 KiB measured
// fastest (BM_ReadBuffer), and 128 KiB 1.6x slower on a 1 GiB file.
inline constexpr size_t k_read_buffer_size = 32 * 1024;

enum class ReadStrategy
{
  automatic, // ahead from k_ahead_threshold, read below
  mmap,      // one mapping, faulted in by the hasher
  ahead,     // one mapping, prepared ahead and released behind by a second thread
  read
};

// What identifies one version of a file without reading it (the digest
// cache's key): a rewrite changes mtime or ctime, a replacement the inode.
struct FileIdentity
{
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  static FileIdentity from_stat(const struct stat& st);
  bool operator==(const FileIdentity&) const = default;
};

struct FileDigest
{
  std::string hex;
  uint64_t size = 0;
  FileIdentity identity;
};

// An open regular file. Anything else (directory, FIFO, device, socket) is
// refused before a byte is read, so a FIFO cannot hang the runner.
struct OpenFile
{
  util::Fd fd;
  struct stat st
  {};
};
Expected<OpenFile> open_regular_file(const std::string& path);

// Digests with one algorithm. Not thread-safe: each thread keeps its own
// Hasher, which reuses one EVP_MD_CTX and one buffer for every file.
class Hasher
{
public:
  explicit Hasher(Algorithm algorithm, ReadStrategy strategy = ReadStrategy::automatic);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  Algorithm
  algorithm() const
  {
    return m_algorithm;
  }

  Expected<std::string> digest_bytes(std::string_view bytes);

  // Digests an already opened regular file of `st.st_size` bytes.
  Expected<std::string> digest_open_file(const OpenFile& file);

  // Digests a stream (a pipe, standard input) until end of file.
  Expected<std::string> digest_stream(int fd, uint64_t* size_out);

private:
  Expected<void> begin();
  Expected<std::string> finish();
  // false when the file cannot be mapped and must be read instead.
  Expected<bool> update_by_mmap(int fd, uint64_t size, bool ahead);
  Expected<void> update_by_read(int fd, uint64_t* size_out);

  // Feeds bytes to whichever context this algorithm uses.
  bool update(const void* data, size_t size);

  struct CtxDeleter
  {
    void operator()(EVP_MD_CTX* ctx) const;
  };

  Algorithm m_algorithm;
  ReadStrategy m_strategy;
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> m_ctx;
  // SHA-256, the default, goes through OpenSSL's SHA256_* functions, not
  // EVP: a process's first EVP fetch constructs every digest of the default
  // provider, 0.7 M instructions, a sixth of a link hook's. The hashing
  // itself is the same assembly (sha256_block_data_order).
  std::unique_ptr<SHA256state_st> m_sha256;
  std::vector<unsigned char> m_buffer;
};

} // namespace fingerprint::digest
