#include <fingerprint/query/index.hpp>

namespace fingerprint::query {

Expected<void>
for_each_indexed_event(const store::Store& store,
                       const std::function<void(store::Event&)>& each,
                       std::vector<store::LogProblem>& problems,
                       const std::string& project)
{
  return store.for_each_build(project, [&](const store::BuildRef&, store::LogContents& contents) {
    problems.insert(problems.end(), contents.problems.begin(), contents.problems.end());
    for (auto& event : contents.events) {
      each(event);
    }
  });
}

void
keep_newest(std::map<std::string, store::Event>& newest, const std::string& key, const store::Event& event)
{
  auto [it, inserted] = newest.try_emplace(key, event);
  if (!inserted && it->second.time <= event.time) {
    it->second = event;
  }
}

} // namespace fingerprint::query
