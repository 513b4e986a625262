#pragma once

// The index pack: `index.pack` at the root of a directory store, the bytes
// of every build index (each stamped with the size, inode and times its
// file had, as builds.summary's lines are) and of every input manifest
// their products name, in one file. A whole-store query (graph, stale,
// history, export, builds without a summary) otherwise opens every index
// and every manifest: on 1,000,000 artifacts 10,000 indexes and 100,000
// manifests, where the opens alone were 40% of the time. With the pack it
// reads one file and stats each index: a build whose stamp matches is
// parsed from the pack's copy, the rest (appended to or rewritten since)
// from its file; a manifest is content-addressed, so its copy can never be
// out of date, only missing (then its file is read).
//
// Like builds.summary it is never required and never written by a query
// or a hook: gc (after its changes) and fsck --repair write it anew, whole
// (temporary file, fsync, rename); fsck checks every copy against its file.
// An end line holds the record count and a checksum of everything before
// it, so a file cut short or damaged is told from a whole one and ignored.

#include <fingerprint/store/store.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fingerprint::store {

inline constexpr std::string_view k_index_pack_file = "index.pack";

struct PackedBuild
{
  BuildRef ref;
  BuildStamp stamp;
  std::string_view bytes; // the index file's bytes when it had `stamp`
};

struct PackedManifest
{
  DigestKey key;
  std::string_view bytes; // the manifest file's bytes
};

class IndexPack
{
public:
  // Parses the file's text; an error says what is wrong with it.
  static Expected<std::shared_ptr<const IndexPack>> parse(std::string text);
  // The same from the open file `fd` of `size` bytes, mapped read-only
  // rather than copied. A pack is only ever replaced by a rename, never
  // rewritten in place (gc and fsck --repair write a temporary file and
  // rename it), so the mapped file keeps its bytes while mapped. `mapped`
  // is false when the file cannot be mapped (the caller reads it instead).
  static Expected<std::shared_ptr<const IndexPack>> map(int fd, size_t size, bool& mapped);

  IndexPack() = default;
  IndexPack(const IndexPack&) = delete;
  IndexPack& operator=(const IndexPack&) = delete;
  ~IndexPack();

  const PackedBuild* build(const BuildRef& ref) const;
  std::optional<std::string_view> manifest(const DigestKey& key) const;

  const std::vector<PackedBuild>&
  builds() const
  {
    return m_builds;
  }
  const std::vector<PackedManifest>&
  manifests() const
  {
    return m_manifests;
  }

private:
  static Expected<std::shared_ptr<const IndexPack>> parse_all(std::shared_ptr<IndexPack> pack, std::string_view all);

  std::string m_text;        // the bytes read, or
  void* m_mapping = nullptr; // the bytes mapped
  size_t m_mapping_size = 0;
  std::vector<PackedBuild> m_builds;
  std::vector<PackedManifest> m_manifests;
  std::unordered_map<std::string, size_t> m_build_at;    // project '\0' build -> m_builds
  std::unordered_map<std::string, size_t> m_manifest_at; // "sha256:<hex>" -> m_manifests
};

// FNV-1a over 8-byte words, then the last bytes one by one (the pack's
// checksum, the path index's hash and checksums).
uint64_t pack_checksum(std::string_view text);

// The file's text: "fingerprint-index-pack 1\n", per build
// "b <project> <build> <size> <inode> <mtime ns> <ctime ns> <length>\n" and
// its bytes, per manifest "m <algorithm>:<hex> <length>\n" and its bytes
// (project and build percent-encoded as layout::encode_component does),
// then "end <records> <checksum, 16 hex>\n".
std::string encode_index_pack(const std::vector<PackedBuild>& builds, const std::vector<PackedManifest>& manifests);

} // namespace fingerprint::store
