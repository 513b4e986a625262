#include <fingerprint/store/artifact_record.hpp>

#include <algorithm>
#include <deque>
#include <set>

namespace fingerprint::store {

ArtifactRecord
fold_record(const DigestKey& key, LogContents contents)
{
  ArtifactRecord record;
  record.key = key;
  record.problems = std::move(contents.problems);
  record.torn_tail = contents.torn_tail;
  for (Event& event : contents.events) {
    if (event.event == EventKind::installed && event.digest != key.str() && event.from == key.str()) {
      record.installed_copies.push_back(std::move(event));
      continue;
    }
    if (event.event == EventKind::produced && event.digest != key.str() && event.inputs == key.str()) {
      record.manifest_users.push_back(std::move(event));
      continue;
    }
    if (event.digest != key.str()) {
      record.problems.push_back({key.log_path(), 0, "event for " + event.digest + " in the log of " + key.str()});
      continue;
    }
    record.size = event.size;
    if (std::find(record.names.begin(), record.names.end(), event.path) == record.names.end()) {
      record.names.push_back(event.path);
    }
    if (event.event == EventKind::consumed) {
      record.consumers.push_back(std::move(event));
    } else {
      record.producers.push_back(std::move(event));
    }
  }
  return record;
}

Expected<void>
add_manifest_consumers(const Store& store, ArtifactRecord& record, const ManifestUserLoader& load)
{
  auto uses = store.find_manifest_uses(record.key, record.problems);
  if (!uses) {
    return uses.error();
  }
  for (const ManifestUse& use : *uses) {
    auto manifest = store.read_manifest(use.manifest);
    if (!manifest) {
      // One damaged manifest must not hide what the others say.
      record.problems.push_back({"manifest " + use.manifest.str(), 0, manifest.error().message});
      continue;
    }
    if (!*manifest) {
      continue; // indexed by a call that died before storing it
    }
    // Its entries: one per role it had there (the last path of each in the
    // manifest's order; an input read at two paths in one role is one edge).
    std::vector<const ManifestEntry*> entries;
    for (const ManifestEntry& candidate : (*manifest)->entries) {
      if (candidate.hex != record.key.hex) {
        continue;
      }
      record.size = candidate.size;
      if (std::find(record.names.begin(), record.names.end(), candidate.path) == record.names.end()) {
        record.names.push_back(candidate.path);
      }
      auto same_role =
        std::find_if(entries.begin(), entries.end(), [&](const ManifestEntry* e) { return e->role == candidate.role; });
      if (same_role == entries.end()) {
        entries.push_back(&candidate);
      } else {
        *same_role = &candidate;
      }
    }
    if (entries.empty()) {
      record.problems.push_back(
        {"manifest " + use.manifest.str(), 0, "indexed under " + record.key.str() + " but does not list it"});
      continue;
    }
    auto users = load(use.manifest);
    if (!users) {
      return users.error();
    }
    for (const ManifestEntry* entry : entries) {
      for (const Event& user : *users) {
        Event event = user;
        event.vouched_by.line = serialize(user); // its signature covers the manifest
        event.signer.clear();
        event.sig.clear();
        event.event = EventKind::consumed;
        event.product = std::move(event.digest);
        event.digest = record.key.str();
        event.size = entry->size;
        event.path = entry->path;
        event.role = std::string(role_name(entry->role));
        event.inputs.clear();
        event.build_id.clear();
        record.consumers.push_back(std::move(event));
      }
    }
  }
  return {};
}

Expected<ArtifactRecord>
load_record(const Store& store, const DigestKey& key)
{
  return store.load_artifact(key);
}

Expected<ArtifactRecord>
Store::load_artifact(const DigestKey& key) const
{
  const Store& store = *this;
  auto contents = store.read_log(key);
  if (!contents) {
    return contents.error();
  }
  ArtifactRecord record = fold_record(key, std::move(*contents));
  auto added =
    add_manifest_consumers(store, record, [&store](const DigestKey& manifest) -> Expected<std::vector<Event>> {
      auto log = store.read_log(manifest);
      if (!log) {
        return log.error();
      }
      return fold_record(manifest, std::move(*log)).manifest_users;
    });
  if (!added) {
    return added.error();
  }
  return record;
}

Expected<std::vector<ConsumerHit>>
walk_consumers(const RecordLoader& load, const DigestKey& key, bool transitive, std::vector<LogProblem>& problems)
{
  std::vector<ConsumerHit> hits;
  std::set<std::string> expanded{key.str()};
  std::deque<std::pair<DigestKey, int>> queue{{key, 1}};
  while (!queue.empty()) {
    auto [current, depth] = std::move(queue.front());
    queue.pop_front();
    auto record = load(current);
    if (!record) {
      return record.error();
    }
    problems.insert(problems.end(), record->problems.begin(), record->problems.end());
    for (const Event& copy : record->installed_copies) {
      if (expanded.insert(copy.digest).second) {
        if (auto installed = parse_digest_key(copy.digest)) {
          // The same artifact under other bytes: its consumers are as near.
          queue.emplace_front(std::move(*installed), depth);
        }
      }
    }
    for (Event& event : record->consumers) {
      if (transitive && expanded.insert(event.product).second) {
        if (auto product = parse_digest_key(event.product)) {
          queue.emplace_back(std::move(*product), depth + 1);
        }
      }
      hits.push_back({std::move(event), depth});
    }
  }
  return hits;
}

Expected<std::vector<Event>>
walk_chain(const RecordLoader& load, const DigestKey& from, const DigestKey& to, std::vector<LogProblem>& problems)
{
  // Breadth first, so the chain is a shortest one; each artifact once.
  std::map<std::string, std::pair<std::string, Event>> reached_by; // artifact -> (previous artifact, step)
  std::deque<DigestKey> queue{from};
  reached_by.emplace(from.str(), std::pair<std::string, Event>{});
  while (!queue.empty() && reached_by.count(to.str()) == 0) {
    const DigestKey current = std::move(queue.front());
    queue.pop_front();
    auto record = load(current);
    if (!record) {
      return record.error();
    }
    problems.insert(problems.end(), record->problems.begin(), record->problems.end());
    auto step = [&](const std::string& next, const Event& event) {
      if (auto key = parse_digest_key(next); key && reached_by.try_emplace(next, current.str(), event).second) {
        queue.push_back(std::move(*key));
      }
    };
    for (const Event& copy : record->installed_copies) {
      step(copy.digest, copy);
    }
    for (const Event& event : record->consumers) {
      step(event.product, event);
    }
  }
  std::vector<Event> chain;
  if (reached_by.count(to.str()) == 0) {
    return chain;
  }
  for (std::string at = to.str(); at != from.str();) {
    const auto& [previous, event] = reached_by.at(at);
    chain.push_back(event);
    at = previous;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

Expected<std::vector<ConsumerHit>>
Store::find_consumers(const DigestKey& key, bool transitive, std::vector<LogProblem>& problems) const
{
  return walk_consumers([this](const DigestKey& at) { return load_record(*this, at); }, key, transitive, problems);
}

Expected<std::vector<Event>>
Store::find_chain(const DigestKey& from, const DigestKey& to, std::vector<LogProblem>& problems) const
{
  return walk_chain([this](const DigestKey& at) { return load_record(*this, at); }, from, to, problems);
}

Expected<void>
Store::for_each_build(const std::string& project, const BuildVisitor& each) const
{
  auto builds = list_builds();
  if (!builds) {
    return builds.error();
  }
  for (const auto& build : *builds) {
    if (!project.empty() && build.project != project) {
      continue;
    }
    auto contents = read_build(build);
    if (!contents) {
      return contents.error();
    }
    each(build, *contents);
  }
  return {};
}

Expected<void>
Store::for_each_build_of(const std::vector<BuildRef>& builds, const BuildVisitor& each) const
{
  for (const auto& build : builds) {
    auto contents = read_build(build);
    if (!contents) {
      return contents.error();
    }
    each(build, *contents);
  }
  return {};
}

} // namespace fingerprint::store
