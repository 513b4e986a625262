#include <fingerprint/query/inputs.hpp>

#include <iterator>

namespace fingerprint::query {

std::string
role_of(const store::Event& event)
{
  return event.role.empty() ? std::string(store::role_name(store::Role::link)) : event.role;
}

const store::Manifest*
ManifestInputs::manifest(const std::string& key, std::vector<store::LogProblem>& problems)
{
  if (auto it = m_manifests.find(key); it != m_manifests.end()) {
    return it->second ? &*it->second : nullptr;
  }
  auto& slot = m_manifests[key];
  const std::string where = "manifest " + key;
  auto parsed = store::parse_digest_key(key);
  if (!parsed) {
    problems.push_back({where, 0, parsed.error().message});
    return nullptr;
  }
  auto read = m_store.read_manifest(*parsed);
  if (!read) {
    problems.push_back({where, 0, read.error().message});
    return nullptr;
  }
  if (!*read) {
    // put_manifest() stores the manifest before any event names it: this
    // one was lost, or set aside by fsck.
    problems.push_back({where, 0, "named as the inputs of a product, but not in the store"});
    return nullptr;
  }
  slot = std::move(**read);
  return &*slot;
}

std::vector<store::Event>
ManifestInputs::of(const store::Event& produced, std::vector<store::LogProblem>& problems)
{
  std::vector<store::Event> inputs;
  if (produced.event != store::EventKind::produced || produced.inputs.empty()) {
    return inputs;
  }
  const store::Manifest* found = manifest(produced.inputs, problems);
  if (found == nullptr) {
    return inputs;
  }
  inputs.reserve(found->entries.size());
  for (const store::ManifestEntry& entry : found->entries) {
    store::Event event = produced;
    event.vouched_by.line = store::serialize(produced); // its signature covers the manifest
    event.signer.clear();
    event.sig.clear();
    event.event = store::EventKind::consumed;
    event.product = produced.digest;
    event.digest = store::DigestKey{found->algorithm, entry.hex}.str();
    event.size = entry.size;
    event.path = entry.path;
    event.role = std::string(store::role_name(entry.role));
    event.inputs.clear();
    event.build_id.clear();
    inputs.push_back(std::move(event));
  }
  return inputs;
}

void
add_manifest_inputs(const store::Store& store,
                    std::vector<store::Event>& events,
                    std::vector<store::LogProblem>& problems)
{
  ManifestInputs manifests(store);
  const size_t count = events.size();
  for (size_t i = 0; i < count; ++i) {
    if (events[i].inputs.empty()) {
      continue;
    }
    auto inputs = manifests.of(events[i], problems); // before `events` grows, which moves events[i]
    events.insert(events.end(), std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end()));
  }
}

} // namespace fingerprint::query
