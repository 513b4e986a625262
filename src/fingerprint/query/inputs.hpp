#pragma once

// What the build index's products were made from: the consumed edges their
// input manifests (store/manifest.hpp) hold. A recorder writes no consumed
// events any more, only a `produced` event naming its manifest in `inputs`,
// so that every question asked of the build index as a whole (build show,
// builds, graph, export, verify) reads them here, each manifest once.

#include <fingerprint/store/store.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fingerprint::query {

// A consumed event's role as queries report it: an old log's consumed
// events carry none, and were link edges (or declared ones, which nobody
// told apart then).
std::string role_of(const store::Event& event);

class ManifestInputs
{
public:
  explicit ManifestInputs(const store::Store& store)
    : m_store(store)
  {
  }

  // One consumed event per entry of the input manifest that `produced`
  // names (nothing when it names none): the entry's digest, size, path and
  // role, the product's digest, and the rest (project, target, build...)
  // from `produced`, as store::add_manifest_consumers() makes them from the
  // input's side. A manifest that is missing or unreadable is appended to
  // `problems` (once) and gives nothing: one damaged file must not hide the
  // rest of the graph.
  std::vector<store::Event> of(const store::Event& produced, std::vector<store::LogProblem>& problems);

  // The input manifest `produced` names, as of() reads it; nullptr when it
  // names none or it is unusable. Valid until the next call.
  const store::Manifest* manifest_of(const store::Event& produced, std::vector<store::LogProblem>& problems);

  // The same manifest as columns (store::decode_manifest_columns()), read
  // and decoded anew at each call into one buffer, without a ManifestEntry
  // per entry: for a pass over a whole store, which reads each manifest
  // about once. nullptr as manifest_of(). Valid until the next call.
  const store::ManifestColumns* columns_of(const store::Event& produced, std::vector<store::LogProblem>& problems);

private:
  const store::Manifest* manifest(const std::string& key, std::vector<store::LogProblem>& problems);

  // Parses `key` and reads it with `read` (DigestKey -> Expected<bool>,
  // true: found). A key that does not parse, a read that fails and a
  // manifest not in the store are reported, and give false.
  template <typename Read>
  bool read(const std::string& key, std::vector<store::LogProblem>& problems, Read&& read);
  // Appends "manifest KEY: WHY" to `problems` the first time KEY is reported.
  void report(const std::string& key, std::string_view why, std::vector<store::LogProblem>& problems);

  const store::Store& m_store;
  // By "sha256:<hex>"; nullopt: unusable. Bounded: a relink's manifest is
  // asked for again soon, and a whole store's would not fit.
  std::map<std::string, std::optional<store::Manifest>> m_manifests;
  std::set<std::string> m_reported; // unusable ones, each reported once
  store::ManifestColumns m_columns;
};

// Appends to `events` (a build index's, or several) the consumed events of
// the input manifests of the produced events among them.
void add_manifest_inputs(const store::Store& store,
                         std::vector<store::Event>& events,
                         std::vector<store::LogProblem>& problems);

} // namespace fingerprint::query
