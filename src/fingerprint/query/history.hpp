#pragma once

// Lineage by path: every version (digest) the store has seen at one path,
// as a product (produced, installed) or as an input a build read (its input
// manifest's entries, and the consumed events of older stores).

#include <fingerprint/store/store.hpp>

#include <set>
#include <string>
#include <vector>

namespace fingerprint::query {

struct Version
{
  std::string digest;               // "sha256:<hex>"
  std::string first_seen;           // the earliest time of an event naming it at the path
  std::vector<store::Event> makers; // its produced and installed events at the path
  bool read = false;                // some build read it at the path
};

// The versions seen at `paths` (absolute, exact bytes: a file's path and
// what its symbolic links resolve to, say), oldest first. Reads the builds
// the store's index by path names for them (store/path_index.hpp) and the
// manifests of their products; without one, every build and manifest, the
// cost of `graph`.
Expected<std::vector<Version>> versions_at(const store::Store& store,
                                           const std::set<std::string>& paths,
                                           std::vector<store::LogProblem>& problems);

// A file's path and, when they differ, what it resolves to now.
std::set<std::string> spellings_of(const std::string& path);

} // namespace fingerprint::query
