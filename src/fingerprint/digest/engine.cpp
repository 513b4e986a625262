#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/util/parallel.hpp>
#include <fingerprint/util/text.hpp>

#include <optional>
#include <sys/stat.h>

namespace fingerprint::digest {

Expected<FileDigest>
digest_path(Hasher& hasher, const std::string& path, const DigestCache* cache)
{
  const bool cached = cache != nullptr && cache->enabled();
  // Taken before the file is examined: an entry is only as fresh as the
  // moment its bytes started to be read.
  const int64_t read_at = util::now_ns();
  if (cached) {
    // A hit needs only the file's identity: stat, not open, fstat and
    // close (a link hook looks up a hundred headers or more this way).
    struct stat st
    {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      FileDigest result;
      result.identity = FileIdentity::from_stat(st);
      result.size = result.identity.size;
      if (auto hit = cache->lookup(hasher.algorithm(), result.identity)) {
        result.hex = std::move(*hit);
        return result;
      }
    }
  }
  auto file = open_regular_file(path);
  if (!file) {
    return file.error();
  }
  FileDigest result;
  result.identity = FileIdentity::from_stat(file->st);
  result.size = result.identity.size;
  if (cached) { // the file may have changed since the stat above
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
  if (cached) {
    cache->store(hasher.algorithm(),
                 result.identity,
                 result.hex,
                 read_at,
                 DigestCache::granularity_ns(file->fd.get(), result.identity));
  }
  return result;
}

std::vector<Expected<FileDigest>>
digest_files(const std::vector<std::string>& paths, const DigestOptions& options)
{
  const unsigned jobs = options.jobs == 0 ? util::default_jobs() : options.jobs;
  std::vector<std::optional<Expected<FileDigest>>> slots(paths.size());
  std::vector<std::optional<Hasher>> hashers(std::min<size_t>(jobs, std::max<size_t>(paths.size(), 1)));
  util::parallel_for(paths.size(), jobs, [&](size_t index, unsigned worker) {
    auto& hasher = hashers[worker];
    if (!hasher) {
      hasher.emplace(options.algorithm, options.strategy);
    }
    slots[index].emplace(digest_path(*hasher, paths[index], options.cache));
  });
  std::vector<Expected<FileDigest>> results;
  results.reserve(paths.size());
  for (auto& slot : slots) {
    results.push_back(std::move(*slot));
  }
  return results;
}

} // namespace fingerprint::digest
