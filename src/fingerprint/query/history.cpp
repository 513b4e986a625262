#include <fingerprint/query/history.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

namespace fingerprint::query {

Expected<std::vector<Version>>
versions_at(const store::Store& store, const std::set<std::string>& paths, std::vector<store::LogProblem>& problems)
{
  std::map<std::string, Version> by_digest;
  auto seen = [&](const store::Event& event) -> Version& {
    Version& version = by_digest[event.digest];
    version.digest = event.digest;
    if (version.first_seen.empty() || event.time < version.first_seen) {
      version.first_seen = event.time;
    }
    return version;
  };
  std::vector<store::Event> products;
  auto each = [&](store::Event& event, bool manifests_may_list) {
    if (event.event == store::EventKind::consumed) {
      if (paths.contains(event.path)) {
        seen(event).read = true;
      }
      return;
    }
    if (paths.contains(event.path)) {
      seen(event).makers.push_back(event);
    }
    if (manifests_may_list && event.event == store::EventKind::produced && !event.inputs.empty()) {
      products.push_back(std::move(event));
    }
  };
  // The builds the store's index by path names (and among them, those whose
  // manifests may list a path), else every build.
  const auto at = store.builds_at_paths(std::vector<std::string>(paths.begin(), paths.end()));
  Expected<void> collected;
  if (at) {
    std::set<std::pair<std::string, std::string>> through_inputs;
    for (size_t i = 0; i < at->builds.size(); ++i) {
      if (at->through_inputs[i]) {
        through_inputs.emplace(at->builds[i].project, at->builds[i].build);
      }
    }
    collected = store.for_each_build_of(at->builds, [&](const store::BuildRef& build, store::LogContents& contents) {
      problems.insert(problems.end(), contents.problems.begin(), contents.problems.end());
      const bool manifests_may_list = through_inputs.contains({build.project, build.build});
      for (auto& event : contents.events) {
        each(event, manifests_may_list);
      }
    });
  } else {
    collected = for_each_indexed_event(
      store, [&](store::Event& event) { each(event, true); }, problems);
  }
  if (!collected) {
    return collected.error();
  }
  ManifestInputs manifests(store);
  auto listed = [&](std::string_view path) {
    return std::any_of(paths.begin(), paths.end(), [&](const std::string& wanted) { return wanted == path; });
  };
  for (const store::Event& product : products) {
    // Most manifests list none of the paths: looked at as columns, and
    // made into events only when one does.
    const store::ManifestColumns* columns = manifests.columns_of(product, problems);
    bool lists_one = false;
    for (size_t i = 0; columns != nullptr && i < columns->size() && !lists_one; ++i) {
      lists_one = listed(columns->path(i));
    }
    if (!lists_one) {
      continue;
    }
    for (const store::Event& input : manifests.of(product, problems)) {
      if (paths.contains(input.path)) {
        seen(input).read = true;
      }
    }
  }
  std::vector<Version> versions;
  versions.reserve(by_digest.size());
  for (auto& [digest, version] : by_digest) {
    versions.push_back(std::move(version));
  }
  std::stable_sort(
    versions.begin(), versions.end(), [](const Version& a, const Version& b) { return a.first_seen < b.first_seen; });
  return versions;
}

std::set<std::string>
spellings_of(const std::string& path)
{
  std::set<std::string> paths{path};
  if (char* resolved = ::realpath(path.c_str(), nullptr)) {
    paths.insert(resolved);
    std::free(resolved);
  }
  return paths;
}

} // namespace fingerprint::query
