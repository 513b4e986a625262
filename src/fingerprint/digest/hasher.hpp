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

namespace fingerprint::digest {

// Files at least this large are mapped, smaller ones read into a buffer.
// Measured with BM_DigestFile (tests/bench), sha256 over page-cache-hot
// files on the 2-core AMD EPYC VMs this project builds on: read() was
// faster at every size from 4 KiB to 64 MiB (1.2x at 1 MiB, 1.8x at 64 MiB,
// 6-10x below 256 KiB), with or without MAP_POPULATE; perf shows page
// faults and munmap's TLB shootdown, which are expensive under this
// hypervisor. So mapping is off by default (the threshold is never
// reached) and stays selectable (ReadStrategy::mmap) for the benchmark to
// re-measure on other machines.
inline constexpr uint64_t k_mmap_threshold = UINT64_MAX;
// Size of each read() on the buffered path: 64 KiB to 1 MiB measured equal
// within noise (BM_ReadBuffer), 32 KiB 4% slower.
inline constexpr size_t k_read_buffer_size = 128 * 1024;

enum class ReadStrategy
{
  automatic,
  mmap,
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
  Expected<bool> update_by_mmap(int fd, uint64_t size);
  Expected<void> update_by_read(int fd, uint64_t* size_out);

  struct CtxDeleter
  {
    void operator()(EVP_MD_CTX* ctx) const;
  };

  Algorithm m_algorithm;
  ReadStrategy m_strategy;
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> m_ctx;
  std::vector<unsigned char> m_buffer;
};

} // namespace fingerprint::digest
