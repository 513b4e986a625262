#include <fingerprint/query/graph.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <unordered_map>

namespace fingerprint::query {

std::string
package_node(const PackageOrigin& origin)
{
  return origin.package + " " + origin.version + " (Debian)";
}

namespace {

// The last component, as std::filesystem::path::filename() gives it for an
// absolute file path, without making a path of it.
std::string_view
file_name(std::string_view path)
{
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Digests as keys: one byte for the algorithm, then the raw bytes, half of
// "sha256:<hex>". A text that is not a digest key is its own key, after a
// byte no algorithm has.
constexpr char k_not_a_digest = '\xff';

uint64_t
key_hash(std::string_view key)
{
  if (key.size() >= 9 && key.front() != k_not_a_digest) {
    // A digest's bytes are as good a hash as any.
    uint64_t word = 0;
    std::memcpy(&word, key.data() + 1, sizeof word);
    return word;
  }
  uint64_t hash = 0xcbf29ce484222325ULL; // FNV-1a
  for (const char c : key) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  }
  return hash;
}

// Keys numbered 0, 1, 2... as first added: one open-addressing table (a
// slot holds 32 bits of the key's hash and its number) over one buffer of
// the keys. A lookup reads one slot and, when the hash bits match, the key:
// a store of a million artifacts looks up a digest per input relation, and
// a table of nodes (std::unordered_map) took three cache misses for each.
class KeyNumbers
{
public:
  static constexpr uint32_t k_none = UINT32_MAX;

  uint32_t
  find(std::string_view key) const
  {
    const uint64_t slot = m_slots[probe(key, key_hash(key))];
    return slot == 0 ? k_none : static_cast<uint32_t>(slot) - 1;
  }

  // Its number, new or not.
  uint32_t
  add(std::string_view key)
  {
    if ((size() + 1) * 2 > m_slots.size()) {
      grow();
    }
    const uint64_t hash = key_hash(key);
    uint64_t& slot = m_slots[probe(key, hash)];
    if (slot == 0) {
      m_keys.append(key);
      m_ends.push_back(m_keys.size());
      slot = (hash >> 32) << 32 | size();
    }
    return static_cast<uint32_t>(slot) - 1;
  }

  size_t
  size() const
  {
    return m_ends.size();
  }

  std::string_view
  key(uint32_t number) const
  {
    const size_t start = number == 0 ? 0 : m_ends[number - 1];
    return std::string_view(m_keys).substr(start, m_ends[number] - start);
  }

private:
  // The slot holding `key`, or the empty one where it would go.
  size_t
  probe(std::string_view key, uint64_t hash) const
  {
    const size_t mask = m_slots.size() - 1;
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint64_t slot = m_slots[i];
      if (slot == 0
          || (static_cast<uint32_t>(slot >> 32) == tag && this->key(static_cast<uint32_t>(slot) - 1) == key)) {
        return i;
      }
    }
  }

  void
  grow()
  {
    std::vector<uint64_t> slots(m_slots.size() * 2);
    const size_t mask = slots.size() - 1;
    for (const uint64_t slot : m_slots) {
      if (slot != 0) {
        size_t i = key_hash(key(static_cast<uint32_t>(slot) - 1)) & mask;
        while (slots[i] != 0) {
          i = (i + 1) & mask;
        }
        slots[i] = slot;
      }
    }
    m_slots = std::move(slots);
  }

  std::string m_keys;
  std::vector<size_t> m_ends;
  std::vector<uint64_t> m_slots = std::vector<uint64_t>(64); // (hash >> 32) << 32 | number + 1; 0: empty
};

char
algorithm_byte(digest::Algorithm algorithm)
{
  return static_cast<char>(algorithm);
}

// The key of "<algorithm>:<hex>", in `key` (a buffer).
const std::string&
raw_key(const std::string& digest, std::string& key)
{
  const size_t colon = digest.find(':');
  const auto algorithm =
    colon == std::string::npos ? std::nullopt : digest::parse_algorithm(std::string_view(digest).substr(0, colon));
  const std::string_view hex = algorithm ? std::string_view(digest).substr(colon + 1) : std::string_view();
  if (algorithm && hex.size() == 2 * digest::digest_size(*algorithm)) {
    key.assign(1, algorithm_byte(*algorithm));
    if (util::append_from_hex(hex, key)) {
      return key;
    }
  }
  key.assign(1, k_not_a_digest);
  key += digest;
  return key;
}

// What raw_key() was made from.
std::string
digest_of_raw_key(std::string_view key)
{
  if (key.front() == k_not_a_digest) {
    return std::string(key.substr(1));
  }
  const auto algorithm = static_cast<digest::Algorithm>(static_cast<unsigned char>(key.front()));
  key.remove_prefix(1);
  return store::DigestKey{algorithm, util::to_hex(reinterpret_cast<const unsigned char*>(key.data()), key.size())}
    .str();
}

} // namespace

Expected<Graph>
collect_graph(const store::Store& store, const GraphOptions& options, std::vector<store::LogProblem>& problems)
{
  Graph graph;
  auto ok = for_each_indexed_event(
    store, [&](store::Event& event) { graph.events.push_back(std::move(event)); }, problems);
  if (!ok) {
    return ok.error();
  }
  // Nodes by number while collecting: a store of a million artifacts names
  // a consumer node per input relation.
  std::vector<std::string> nodes;
  std::unordered_map<std::string, uint32_t> node_ids;
  std::string node_name;
  auto node = [&](const store::Event& event) {
    node_name = event.project;
    if (options.per_target) {
      node_name += '/';
      node_name += event.target;
    }
    auto [it, added] = node_ids.try_emplace(node_name, static_cast<uint32_t>(nodes.size()));
    if (added) {
      nodes.push_back(node_name);
    }
    return it->second;
  };
  // Producers and installs are in the build index itself; manifests hold
  // consumed edges only. By raw digest: a store of a million artifacts
  // looks up a digest per input relation.
  KeyNumbers products;                                       // digest -> number
  std::vector<uint32_t> producer_of;                         // product's number -> node
  KeyNumbers copies;                                         // installed copies' digests -> number
  std::vector<std::pair<std::string, uint32_t>> copy_origin; // copy's number -> (from, installer node)
  std::unordered_map<std::string, std::string> package_of;   // path -> its package's node
  std::string key;
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::produced) {
      const uint32_t number = products.add(raw_key(event.digest, key));
      producer_of.resize(products.size());
      producer_of[number] = node(event);
    } else if (event.event == store::EventKind::installed) {
      const uint32_t number = copies.add(raw_key(event.digest, key));
      if (number == copy_origin.size()) {
        std::string from;
        copy_origin.emplace_back(raw_key(event.from, from), node(event));
      }
    }
  }
  // What passes along an edge between two recorded nodes: its files' names
  // (each made once, not once per relation) and, for the page, digests.
  struct Passed
  {
    std::set<std::string, std::less<>> names;
    std::set<std::string> digests;
  };
  std::map<std::pair<uint32_t, uint32_t>, Passed> passed_between; // (producer, consumer) -> what passed
  KeyNumbers unproduced;                                          // digest -> its number
  std::vector<std::vector<uint32_t>> unproduced_by_node;          // consumer node -> those numbers
  // The consumer node's edge from whoever made the artifact of raw key
  // `raw` (`digest` spells it, for the page), read at `path`.
  auto add_edge = [&](uint32_t consumer, std::string_view raw, std::string_view path, const std::string* digest) {
    uint32_t producer = 0;
    if (const uint32_t product = products.find(raw); product != KeyNumbers::k_none) {
      producer = producer_of[product];
    } else if (const uint32_t copy = copies.find(raw); copy != KeyNumbers::k_none) {
      // An installed copy leads to the build that made the file it was
      // installed from; a file installed from the source tree, to the
      // project that installed it.
      const uint32_t origin = products.find(copy_origin[copy].first);
      producer = origin != KeyNumbers::k_none ? producer_of[origin] : copy_origin[copy].second;
    } else {
      const uint32_t id = unproduced.add(raw);
      if (unproduced_by_node.size() <= consumer) {
        unproduced_by_node.resize(consumer + 1);
      }
      unproduced_by_node[consumer].push_back(id);
      if (!options.unproduced_edges) {
        return;
      }
      std::string from(k_unproduced_node);
      if (options.packages != nullptr) {
        auto [known, looked_up] = package_of.try_emplace(std::string(path));
        if (looked_up) {
          auto origin = options.packages->owner(known->first);
          known->second = origin ? package_node(*origin) : from;
        }
        from = known->second;
      }
      const Edge edge{from, nodes[consumer]};
      graph.unproduced_edges[edge].insert(store::lossy_text(file_name(path)));
      if (digest != nullptr) {
        graph.digests[edge].insert(*digest);
      }
      return;
    }
    if (producer != consumer) {
      Passed& passed = passed_between[{producer, consumer}];
      const std::string_view name = file_name(path);
      if (!passed.names.contains(name)) {
        passed.names.insert(store::lossy_text(name));
      }
      if (digest != nullptr) {
        passed.digests.insert(*digest);
      }
    }
  };
  // A manifest's edges are made one product at a time and, unless the
  // caller wants the events, taken from its columns without making an
  // event or an entry of each: a store of a million artifacts holds
  // millions of them.
  ManifestInputs manifests(store);
  std::vector<store::Event> inputs;
  for (const auto& event : graph.events) {
    if (event.event == store::EventKind::consumed) {
      add_edge(node(event), raw_key(event.digest, key), event.path, options.with_events ? &event.digest : nullptr);
    } else if (!event.inputs.empty() && options.with_events) {
      for (store::Event& input : manifests.of(event, problems)) {
        add_edge(node(input), raw_key(input.digest, key), input.path, &input.digest);
        inputs.push_back(std::move(input));
      }
    } else if (!event.inputs.empty() && event.event == store::EventKind::produced) {
      const store::ManifestColumns* columns = manifests.columns_of(event, problems);
      if (columns == nullptr) {
        continue;
      }
      const uint32_t consumer = node(event);
      key.assign(1, algorithm_byte(columns->algorithm));
      for (size_t i = 0; i < columns->size(); ++i) {
        key.resize(1);
        key += columns->raw_digest(i);
        add_edge(consumer, key, columns->path(i), nullptr);
      }
    }
  }
  graph.events.insert(
    graph.events.end(), std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end()));
  for (auto& [ends, passed] : passed_between) {
    const Edge edge{nodes[ends.first], nodes[ends.second]};
    graph.edges.emplace(edge, std::set<std::string>(passed.names.begin(), passed.names.end()));
    if (options.with_events) {
      graph.digests[edge] = std::move(passed.digests);
    }
  }
  graph.unproduced_count = unproduced.size();
  if (options.with_events) {
    graph.unproduced_digests.reserve(unproduced.size());
    for (uint32_t id = 0; id < unproduced.size(); ++id) {
      graph.unproduced_digests.push_back(digest_of_raw_key(unproduced.key(id)));
    }
  }
  for (size_t consumer = 0; consumer < unproduced_by_node.size(); ++consumer) {
    std::vector<uint32_t>& ids = unproduced_by_node[consumer];
    if (!ids.empty()) {
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      graph.unproduced[nodes[consumer]] = std::move(ids);
    }
  }
  return graph;
}

} // namespace fingerprint::query
