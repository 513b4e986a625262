#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/util/expected.hpp>

#include <string>
#include <vector>

namespace fingerprint::digest {

class DigestCache;

struct DigestOptions
{
  Algorithm algorithm = k_default_algorithm;
  unsigned jobs = 0; // 0: all cores
  ReadStrategy strategy = ReadStrategy::automatic;
  const DigestCache* cache = nullptr; // null: always read the bytes
};

// Opens, checks and digests one file; with a cache, an unchanged file is not
// read again. Errors name the path.
Expected<FileDigest> digest_path(Hasher& hasher, const std::string& path, const DigestCache* cache);

// Digests every path, in parallel, and returns the results in input order.
// Each failure names its path.
std::vector<Expected<FileDigest>> digest_files(const std::vector<std::string>& paths, const DigestOptions& options);

} // namespace fingerprint::digest
