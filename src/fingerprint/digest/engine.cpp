#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/util/parallel.hpp>
#include <fingerprint/util/text.hpp>

#include <atomic>
#include <deque>
#include <optional>
#include <sys/stat.h>

namespace fingerprint::digest {

namespace {

// Below this many bytes left to read, one thread reads them all: starting a
// thread costs more CPU than hashing a few hundred kilobytes of headers, and
// a link hook whose inputs are all in the cache reads nothing.
constexpr uint64_t k_parallel_bytes = uint64_t{1} << 20;

// The cache's digest of the file at `path`, from its identity alone (stat,
// not open, fstat and close: a link hook looks up a hundred headers or more
// this way). `size` is set to the file's size when it is a regular file.
std::optional<FileDigest>
cached_digest(Algorithm algorithm, const std::string& path, const DigestCache& cache, uint64_t& size)
{
  struct stat st
  {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  FileDigest result;
  result.identity = FileIdentity::from_stat(st);
  result.size = result.identity.size;
  size = result.size;
  auto hit = cache.lookup(algorithm, result.identity);
  if (!hit) {
    return std::nullopt;
  }
  result.hex = std::move(*hit);
  return result;
}

// Reads and digests the file; stores the digest in `cache` when it may be
// trusted.
Expected<FileDigest>
read_and_digest(Hasher& hasher, const std::string& path, const DigestCache* cache)
{
  // Taken before the file is opened: an entry is only as fresh as the
  // moment its bytes started to be read.
  const int64_t read_at = util::now_ns();
  auto file = open_regular_file(path);
  if (!file) {
    return file.error();
  }
  FileDigest result;
  result.identity = FileIdentity::from_stat(file->st);
  result.size = result.identity.size;
  if (cache != nullptr) { // the file may have changed since it was looked up
    if (auto hit = cache->lookup(hasher.algorithm(), result.identity)) {
      result.hex = std::move(*hit);
      return result;
    }
  }
  auto hex = hasher.digest_open_file(*file);
  if (!hex) {
    return make_error(path, hex.error().message);
  }
  struct stat after
  {};
  // A writer that kept the size but changed bytes shows in mtime/ctime.
  if (::fstat(file->fd.get(), &after) != 0 || !(FileIdentity::from_stat(after) == result.identity)) {
    return make_error(path, "file changed while being read");
  }
  result.hex = std::move(*hex);
  if (cache != nullptr) {
    cache->store(hasher.algorithm(),
                 result.identity,
                 result.hex,
                 read_at,
                 DigestCache::granularity_ns(file->fd.get(), result.identity));
  }
  return result;
}

// BuildMemo::of's memos: the newest last. A build tool invocation's memo
// lives until k_memos newer ones have been asked for.
constexpr size_t k_memos = 4;
// Past this many files a memo takes no more (about 25 MB): a build that
// reads more looks at the rest as without it.
constexpr size_t k_memo_files = 100'000;
std::atomic<bool> g_memo_enabled{false};
std::mutex g_memos_mutex;
std::deque<std::pair<std::string, std::shared_ptr<BuildMemo>>> g_memos;

} // namespace

std::optional<FileDigest>
BuildMemo::find(const std::string& path) const
{
  std::lock_guard lock(m_mutex);
  const auto found = m_files.find(path);
  return found == m_files.end() ? std::nullopt : std::optional(found->second);
}

bool
BuildMemo::contains(const std::string& path) const
{
  std::lock_guard lock(m_mutex);
  return m_files.contains(path);
}

void
BuildMemo::keep(const std::string& path, const FileDigest& digest)
{
  std::lock_guard lock(m_mutex);
  if (m_files.size() < k_memo_files) {
    m_files.try_emplace(path, digest);
  }
}

size_t
BuildMemo::size() const
{
  std::lock_guard lock(m_mutex);
  return m_files.size();
}

std::shared_ptr<BuildMemo>
BuildMemo::of(const std::string& invocation, Algorithm algorithm)
{
  if (!g_memo_enabled || invocation.empty()) {
    return nullptr;
  }
  const std::string key = invocation + " " + std::string(algorithm_name(algorithm));
  std::lock_guard lock(g_memos_mutex);
  for (auto it = g_memos.begin(); it != g_memos.end(); ++it) {
    if (it->first == key) {
      auto memo = it->second;
      if (std::next(it) != g_memos.end()) { // the newest goes last
        g_memos.erase(it);
        g_memos.emplace_back(key, memo);
      }
      return memo;
    }
  }
  if (g_memos.size() >= k_memos) {
    g_memos.pop_front();
  }
  g_memos.emplace_back(key, std::make_shared<BuildMemo>());
  return g_memos.back().second;
}

void
BuildMemo::enable(bool on)
{
  g_memo_enabled = on;
  if (!on) {
    std::lock_guard lock(g_memos_mutex);
    g_memos.clear();
  }
}

bool
BuildMemo::enabled()
{
  return g_memo_enabled;
}

Expected<FileDigest>
digest_path(Hasher& hasher, const std::string& path, const DigestCache* cache)
{
  const DigestCache* usable = cache != nullptr && cache->enabled() ? cache : nullptr;
  if (usable != nullptr) {
    uint64_t size = 0;
    if (auto hit = cached_digest(hasher.algorithm(), path, *usable, size)) {
      return std::move(*hit);
    }
  }
  return read_and_digest(hasher, path, usable);
}

std::vector<Expected<FileDigest>>
digest_files(const std::vector<std::string>& paths, const DigestOptions& options)
{
  const DigestCache* cache = options.cache != nullptr && options.cache->enabled() ? options.cache : nullptr;
  std::vector<std::optional<Expected<FileDigest>>> slots(paths.size());
  BuildMemo* const memo = options.memo;
  std::vector<char> remembered(memo != nullptr ? paths.size() : 0);
  const auto from_memo = [&](size_t i) {
    if (memo == nullptr || i < options.memo_first) {
      return false;
    }
    if (auto found = memo->find(paths[i])) {
      slots[i].emplace(std::move(*found));
      remembered[i] = 1;
      return true;
    }
    return false;
  };
  // The memo's and the cache's hits first, in this thread; only what is
  // left is read, in parallel when there is enough of it.
  std::vector<size_t> left;
  uint64_t left_bytes = 0;
  if (cache != nullptr) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (from_memo(i)) {
        continue;
      }
      uint64_t size = 0;
      if (auto hit = cached_digest(options.algorithm, paths[i], *cache, size)) {
        slots[i].emplace(std::move(*hit));
      } else {
        left.push_back(i);
        left_bytes += size;
      }
    }
  } else {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (!from_memo(i)) {
        left.push_back(i);
      }
    }
    left_bytes = k_parallel_bytes; // unknown: as much as is worth the threads
  }
  unsigned jobs = options.jobs;
  if (jobs == 0) {
    jobs = left_bytes < k_parallel_bytes ? 1 : util::default_jobs();
  }
  std::vector<std::optional<Hasher>> hashers(std::min<size_t>(jobs, std::max<size_t>(left.size(), 1)));
  util::parallel_for(left.size(), jobs, [&](size_t index, unsigned worker) {
    auto& hasher = hashers[worker];
    if (!hasher) {
      hasher.emplace(options.algorithm, options.strategy);
    }
    slots[left[index]].emplace(read_and_digest(*hasher, paths[left[index]], cache));
  });
  std::vector<Expected<FileDigest>> results;
  results.reserve(paths.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    if (memo != nullptr && i >= options.memo_first && remembered[i] == 0 && *slots[i]) {
      memo->keep(paths[i], **slots[i]);
    }
    results.push_back(std::move(*slots[i]));
  }
  return results;
}

} // namespace fingerprint::digest
