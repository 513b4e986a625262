#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace fingerprint::bench {

// A private directory under $TMPDIR (or /tmp), made with mkdtemp and removed
// with everything in it when destroyed. Benchmarks put their fixtures here so
// that one run leaves nothing behind.
class ScratchDir
{
public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string&
  path() const
  {
    return m_path;
  }

  // A file of `size` pseudo-random bytes, made on first request and then
  // shared. It is synced and read back once, so its pages are clean and in the
  // page cache: the digest benchmarks measure the CPU path, not the disk.
  const std::string& hot_file(uint64_t size);

private:
  std::string m_path;
  std::map<uint64_t, std::string> m_files;
};

// Deterministic filler (xorshift), so that runs digest the same bytes.
std::string pseudo_random_bytes(size_t size, uint64_t seed);

// Reads a whole file; throws std::runtime_error naming the path on failure.
std::string read_file(const std::string& path);

void register_digest_benchmarks(ScratchDir& scratch);
void register_store_benchmarks(ScratchDir& scratch);

} // namespace fingerprint::bench
