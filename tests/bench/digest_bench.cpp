// BM_DigestFile: the read/mmap/ahead choice of Hasher (k_ahead_threshold).
// BM_ReadBuffer: the size of each read() on the buffered path
// (k_read_buffer_size), measured with plain read() and OpenSSL alone.
// BM_DigestAlgorithm: the cost of each algorithm over bytes in memory.

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/text.hpp>

#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include "bench_support.hpp"
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace fingerprint::bench {

namespace {

using digest::Algorithm;
using digest::Hasher;
using digest::ReadStrategy;

constexpr uint64_t k_kib = 1024;
constexpr uint64_t k_mib = 1024 * k_kib;

constexpr uint64_t k_file_sizes[] =
  {4 * k_kib, 16 * k_kib, 64 * k_kib, 256 * k_kib, 1 * k_mib, 4 * k_mib, 16 * k_mib, 64 * k_mib, 256 * k_mib};
constexpr size_t k_read_buffer_sizes[] = {8 * k_kib, 16 * k_kib, 32 * k_kib, 64 * k_kib, 128 * k_kib, 1 * k_mib};
constexpr uint64_t k_read_buffer_file_size = 64 * k_mib;
constexpr size_t k_algorithm_buffer_size = 16 * k_mib;

// The reference every file benchmark must agree with before it is timed, so a
// fast but wrong path cannot win. Computed once per file: Google Benchmark
// calls each function several times (to size the run, then per repetition).
const std::string&
expected_sha256(const std::string& path)
{
  static std::map<std::string, std::string> expected;
  auto [slot, inserted] = expected.try_emplace(path);
  if (inserted) {
    Hasher hasher(Algorithm::sha256);
    auto hex = hasher.digest_bytes(read_file(path));
    slot->second = hex ? *hex : std::string();
  }
  return slot->second;
}

// Whether `strategy` digests `path` to the reference, checked once each.
bool
agrees_with_reference(const std::string& path, ReadStrategy strategy)
{
  static std::set<std::pair<std::string, ReadStrategy>> agreed;
  if (agreed.contains({path, strategy})) {
    return true;
  }
  Hasher hasher(Algorithm::sha256, strategy);
  auto file = digest::open_regular_file(path);
  auto hex = file ? hasher.digest_open_file(*file) : file.error();
  if (!hex || *hex != expected_sha256(path)) {
    return false;
  }
  agreed.insert({path, strategy});
  return true;
}

void
digest_file(benchmark::State& state, ScratchDir& scratch, ReadStrategy strategy, uint64_t size)
{
  const std::string& path = scratch.hot_file(size);
  if (!agrees_with_reference(path, strategy)) {
    state.SkipWithError("digest differs from digest_bytes");
    return;
  }
  Hasher hasher(Algorithm::sha256, strategy);
  for (auto _ : state) {
    // Opened each time, as a run does for every file: open and fstat are part
    // of the per-file cost the threshold is weighed against.
    auto file = digest::open_regular_file(path);
    if (!file) {
      state.SkipWithError(file.error().message.c_str());
      break;
    }
    auto hex = hasher.digest_open_file(*file);
    if (!hex) {
      state.SkipWithError(hex.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(hex->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}

struct CtxDeleter
{
  void
  operator()(EVP_MD_CTX* ctx) const
  {
    EVP_MD_CTX_free(ctx);
  }
};

// What Hasher's read path does (same open flags, same fadvise), with the
// buffer size as the parameter.
void
read_buffer(benchmark::State& state, ScratchDir& scratch, size_t buffer_size)
{
  const std::string& path = scratch.hot_file(k_read_buffer_file_size);
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx(EVP_MD_CTX_new());
  std::vector<unsigned char> buffer(buffer_size);
  const EVP_MD* md = digest::evp_md(Algorithm::sha256);
  std::string last_hex;
  for (auto _ : state) {
    util::Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1) {
      state.SkipWithError("cannot open the file or start the digest");
      break;
    }
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    uint64_t total = 0;
    ssize_t n = 0;
    while ((n = ::read(fd.get(), buffer.data(), buffer.size())) != 0) {
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 || EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n)) != 1) {
        break;
      }
      total += static_cast<uint64_t>(n);
    }
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (n != 0 || total != k_read_buffer_file_size || EVP_DigestFinal_ex(ctx.get(), out, &length) != 1) {
      state.SkipWithError("read or digest failed");
      break;
    }
    benchmark::DoNotOptimize(out);
    last_hex = util::to_hex(out, length);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * k_read_buffer_file_size));
  // Checked after the loop, untimed: it must have computed the real digest.
  if (!state.error_occurred() && last_hex != expected_sha256(path)) {
    state.SkipWithError("digest differs from digest_bytes");
  }
}

void
digest_algorithm(benchmark::State& state, Algorithm algorithm)
{
  static const std::string bytes = pseudo_random_bytes(k_algorithm_buffer_size, 16);
  Hasher hasher(algorithm);
  for (auto _ : state) {
    auto hex = hasher.digest_bytes(bytes);
    if (!hex) {
      state.SkipWithError(hex.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(hex->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}

} // namespace

void
register_digest_benchmarks(ScratchDir& scratch)
{
  // bytes_per_second is per CPU second (Google Benchmark's default; on a
  // shared machine the steadier clock, and the kernel's share of a mapping,
  // its page faults and munmap's TLB flush, is charged to it). The wall time
  // is in the same report as real_time.
  //
  // Both strategies of one size side by side, so that they run close in time
  // on a shared machine.
  for (const uint64_t size : k_file_sizes) {
    for (const auto& [name, strategy] : {std::pair{"mmap", ReadStrategy::mmap},
                                         std::pair{"ahead", ReadStrategy::ahead},
                                         std::pair{"read", ReadStrategy::read}}) {
      const std::string label = "BM_DigestFile/" + std::string(name) + "/" + std::to_string(size);
      benchmark::RegisterBenchmark(label.c_str(), digest_file, std::ref(scratch), strategy, size)
        ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const size_t buffer_size : k_read_buffer_sizes) {
    const std::string label = "BM_ReadBuffer/" + std::to_string(buffer_size);
    benchmark::RegisterBenchmark(label.c_str(), read_buffer, std::ref(scratch), buffer_size)
      ->Unit(benchmark::kMillisecond);
  }
  for (const Algorithm algorithm : digest::k_all_algorithms) {
    const std::string label = "BM_DigestAlgorithm/" + std::string(digest::algorithm_name(algorithm));
    benchmark::RegisterBenchmark(label.c_str(), digest_algorithm, algorithm)->Unit(benchmark::kMillisecond);
  }
}

} // namespace fingerprint::bench
