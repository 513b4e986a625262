#pragma once

#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/event.hpp>

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
  std::vector<LogProblem> problems; // lines that could not be read
  bool torn_tail = false;

  bool
  recorded() const
  {
    return !producers.empty() || !consumers.empty();
  }
};

ArtifactRecord fold_record(const DigestKey& key, LogContents contents);

Expected<ArtifactRecord> load_record(const DirectoryStore& store, const DigestKey& key);

struct ConsumerHit
{
  Event event;
  int depth = 1; // 1: consumed the artifact itself; 2: consumed a product of depth 1; ...
};

// Who consumed `key` or an installed copy of it; with `transitive`, also who
// consumed their products, breadth first, each product expanded once (so
// cycles end). Problems met in any log are appended to `problems`.
Expected<std::vector<ConsumerHit>> find_consumers(const DirectoryStore& store,
                                                  const DigestKey& key,
                                                  bool transitive,
                                                  std::vector<LogProblem>& problems);

// The shortest chain of events that leads from artifact `from` to artifact
// `to`: each step is a `consumed` event (its product is the next artifact)
// or an `installed` one (an installed copy of the artifact). Empty when
// `to` does not depend on `from`; `from == to` is a chain of no steps.
Expected<std::vector<Event>> find_chain(const DirectoryStore& store,
                                        const DigestKey& from,
                                        const DigestKey& to,
                                        std::vector<LogProblem>& problems);

// Calls `each` for every event of the build index, build by build (only
// `project`'s builds when it is not empty). Unreadable lines are appended
// to `problems`; a build index that cannot be read at all is an error.
Expected<void> for_each_indexed_event(const DirectoryStore& store,
                                      const std::function<void(Event&)>& each,
                                      std::vector<LogProblem>& problems,
                                      const std::string& project = {});

// Keeps in newest[key] whichever event seen under `key` is the latest.
void keep_newest(std::map<std::string, Event>& newest, const std::string& key, const Event& event);

} // namespace fingerprint::store
