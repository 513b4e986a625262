#pragma once

#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/store.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fingerprint::store {

// One artifact's log folded into what people ask about.
struct ArtifactRecord
{
  DigestKey key;
  uint64_t size = 0;
  std::vector<std::string> names; // every path it was seen under, first seen first
  std::vector<Event> producers;   // produced and installed events
  std::vector<Event> consumers;   // consumed events
  // Installed copies of this artifact (their `installed` events, whose
  // `from` is this artifact): the bytes differ (RPATHs rewritten), the
  // artifact is the same.
  std::vector<Event> installed_copies;
  // When this artifact is an input manifest: the `produced` events of the
  // products made from it (their `inputs` is this artifact).
  std::vector<Event> manifest_users;
  std::vector<LogProblem> problems; // lines that could not be read
  bool torn_tail = false;

  bool
  recorded() const
  {
    return !producers.empty() || !consumers.empty();
  }
};

ArtifactRecord fold_record(const DigestKey& key, LogContents contents);

// Adds to `record` a `consumed` event (with its `role`) per product whose
// input manifest lists the artifact, and the paths those manifests name it
// by to its names. `load` reads a manifest's record (its users).
using ManifestUserLoader = std::function<Expected<std::vector<Event>>(const DigestKey& manifest)>;
Expected<void> add_manifest_consumers(const Store& store, ArtifactRecord& record, const ManifestUserLoader& load);

// fold_record() of the artifact's log, with add_manifest_consumers().
Expected<ArtifactRecord> load_record(const Store& store, const DigestKey& key);

// Reads one artifact's record, for the walks below.
using RecordLoader = std::function<Expected<ArtifactRecord>(const DigestKey&)>;

// Store::find_consumers and Store::find_chain, over any way of loading
// records (one log at a time, or from rows fetched in one query).
Expected<std::vector<ConsumerHit>> walk_consumers(const RecordLoader& load,
                                                  const DigestKey& key,
                                                  bool transitive,
                                                  std::vector<LogProblem>& problems);
Expected<std::vector<Event>> walk_chain(const RecordLoader& load,
                                        const DigestKey& from,
                                        const DigestKey& to,
                                        std::vector<LogProblem>& problems);

} // namespace fingerprint::store
