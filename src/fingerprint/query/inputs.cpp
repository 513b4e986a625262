#include <fingerprint/query/inputs.hpp>

#include <iterator>

namespace fingerprint::query {

namespace {

// How many decoded manifests one command keeps (a few MB).
constexpr size_t k_kept_manifests = 4096;

} // namespace

std::string
role_of(const store::Event& event)
{
  return event.role.empty() ? std::string(store::role_name(store::Role::link)) : event.role;
}

void
ManifestInputs::report(const std::string& key, std::string_view why, std::vector<store::LogProblem>& problems)
{
  if (m_reported.insert(key).second) {
    problems.push_back({"manifest " + key, 0, std::string(why)});
  }
}

template <typename Read>
bool
ManifestInputs::read(const std::string& key, std::vector<store::LogProblem>& problems, Read&& read)
{
  auto parsed = store::parse_digest_key(key);
  if (!parsed) {
    report(key, parsed.error().message, problems);
    return false;
  }
  Expected<bool> found = read(*parsed);
  if (!found) {
    report(key, found.error().message, problems);
    return false;
  }
  if (!*found) {
    report(key, store::k_manifest_missing, problems);
    return false;
  }
  return true;
}

const store::Manifest*
ManifestInputs::manifest(const std::string& key, std::vector<store::LogProblem>& problems)
{
  if (auto it = m_manifests.find(key); it != m_manifests.end()) {
    return it->second ? &*it->second : nullptr;
  }
  if (m_manifests.size() >= k_kept_manifests) {
    m_manifests.clear();
  }
  auto& slot = m_manifests[key];
  read(key, problems, [&](const store::DigestKey& parsed) -> Expected<bool> {
    auto manifest = m_store.read_manifest(parsed);
    if (!manifest) {
      return manifest.error();
    }
    slot = std::move(*manifest);
    return slot.has_value();
  });
  return slot ? &*slot : nullptr;
}

const store::ManifestColumns*
ManifestInputs::columns_of(const store::Event& produced, std::vector<store::LogProblem>& problems)
{
  if (produced.event != store::EventKind::produced || produced.inputs.empty()) {
    return nullptr;
  }
  const std::string& key = produced.inputs;
  if (m_reported.contains(key)) {
    return nullptr;
  }
  const bool found = read(
    key, problems, [&](const store::DigestKey& parsed) { return m_store.read_manifest_columns(parsed, m_columns); });
  return found ? &m_columns : nullptr;
}

const store::Manifest*
ManifestInputs::manifest_of(const store::Event& produced, std::vector<store::LogProblem>& problems)
{
  if (produced.event != store::EventKind::produced || produced.inputs.empty()) {
    return nullptr;
  }
  return manifest(produced.inputs, problems);
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
  // The product's signature covers the manifest: its line vouches for every
  // edge. An unsigned product vouches for nothing (an edge without a voucher
  // reads as unsigned, as it would through one), and its line is not made
  // once per edge: a store of a million input relations has a million.
  const std::string voucher =
    produced.signer.empty() && produced.sig.empty() ? std::string() : store::serialize(produced);
  for (const store::ManifestEntry& entry : found->entries) {
    store::Event event = produced;
    event.vouched_by.line = voucher;
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
