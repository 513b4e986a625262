#include <fingerprint/util/parallel.hpp>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace fingerprint::util {

unsigned
default_jobs()
{
  return std::max(1u, std::thread::hardware_concurrency());
}

void
parallel_for(size_t count, unsigned jobs, const std::function<void(size_t index, unsigned worker)>& body)
{
  const unsigned workers = static_cast<unsigned>(std::min<size_t>(std::max(1u, jobs), count));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) {
      body(i, 0);
    }
    return;
  }
  // Work stealing from one counter: files differ wildly in size, so a static
  // split would leave one core idle behind another's large file.
  std::atomic<size_t> next{0};
  auto run = [&](unsigned worker) {
    for (size_t i = next++; i < count; i = next++) {
      body(i, worker);
    }
  };
  std::vector<std::jthread> threads;
  threads.reserve(workers - 1);
  for (unsigned w = 1; w < workers; ++w) {
    threads.emplace_back(run, w);
  }
  run(0);
}

} // namespace fingerprint::util
