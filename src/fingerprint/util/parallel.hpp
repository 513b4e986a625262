#pragma once

#include <cstddef>
#include <functional>

namespace fingerprint::util {

// Number of workers to use when the user did not say: all online cores.
unsigned default_jobs();

// Calls `body(index, worker)` for every index in [0, count) on at most `jobs`
// threads; `worker` is in [0, jobs) and lets each thread keep its own state.
// With one job or one item everything runs on the calling thread.
void parallel_for(size_t count, unsigned jobs, const std::function<void(size_t index, unsigned worker)>& body);

} // namespace fingerprint::util
