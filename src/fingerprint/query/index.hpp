#pragma once

// Questions asked of the build index as a whole: every event of every
// build, and the newest of them by some key.

#include <fingerprint/store/store.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fingerprint::query {

// Calls `each` for every event of the build index, build by build (only
// `project`'s builds when it is not empty). Unreadable lines are appended
// to `problems`; a build index that cannot be read at all is an error.
Expected<void> for_each_indexed_event(const store::Store& store,
                                      const std::function<void(store::Event&)>& each,
                                      std::vector<store::LogProblem>& problems,
                                      const std::string& project = {});

// Keeps in newest[key] whichever event seen under `key` is the latest.
void keep_newest(std::map<std::string, store::Event>& newest, const std::string& key, const store::Event& event);

} // namespace fingerprint::query
