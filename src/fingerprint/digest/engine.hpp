#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/util/expected.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fingerprint::digest {

class DigestCache;

// The digests the links of one build tool invocation (one `ninja` run) have
// taken of the files they read, kept for the rest of that run by the
// process that serves its hooks (the recorder): a header that every link
// reads is looked at once a build, not once a link. That is the model the
// build tool works by (Ninja stats a file once a run): in a build whose
// steps are ordered, a file the build writes is written before any step
// that reads it starts, and once only, so what the first reader found is
// what every later reader of the run finds. A file changed from outside
// during the run is seen by the next run, as Ninja sees it then
// (docs/ARCHITECTURE.md, "A file is looked at once a build").
class BuildMemo
{
public:
  std::optional<FileDigest> find(const std::string& path) const;
  bool contains(const std::string& path) const; // read as a regular file this run
  void keep(const std::string& path, const FileDigest& digest);
  size_t size() const;

  // The memo of `invocation` ("<pid>:<start>" of its build tool,
  // hook::build_tool_run) for `algorithm`; null unless enable(true) was
  // called (a recorder does), and for an empty invocation (no build tool).
  // A process keeps the memos of its last few invocations (two trees built
  // at once each have theirs).
  static std::shared_ptr<BuildMemo> of(const std::string& invocation, Algorithm algorithm);
  static void enable(bool on);
  static bool enabled();

private:
  mutable std::mutex m_mutex;
  std::unordered_map<std::string, FileDigest> m_files;
};

struct DigestOptions
{
  Algorithm algorithm = k_default_algorithm;
  unsigned jobs = 0; // 0: all cores
  ReadStrategy strategy = ReadStrategy::automatic;
  const DigestCache* cache = nullptr; // null: always read the bytes
  // Paths from index memo_first on are looked up in (and added to) memo
  // before anything else; those before it (what a step produced) never are.
  BuildMemo* memo = nullptr;
  size_t memo_first = 0;
};

// Opens, checks and digests one file; with a cache, an unchanged file is not
// read again. Errors name the path.
Expected<FileDigest> digest_path(Hasher& hasher, const std::string& path, const DigestCache* cache);

// Digests every path, in parallel, and returns the results in input order.
// Each failure names its path.
std::vector<Expected<FileDigest>> digest_files(const std::vector<std::string>& paths, const DigestOptions& options);

} // namespace fingerprint::digest
