#pragma once

// The index by path: which builds' events or input manifests name a path.
//
// `history PATH` lists every version seen at a path. Without an index it
// reads every build's index and every manifest their products name: at
// 1,000,000 artifacts 10,000 indexes and 100,000 manifests, over a second,
// where the same question on 10,000 artifacts takes about 12 ms. With it,
// `history` reads the builds the index names for the path, and only those.
//
// Two files at the store's root:
//
// - `paths.index`, written whole by gc and fsck --repair (temporary file,
//   fsync, rename) from every build index and the manifests they name: per
//   build, the hash of every path its events or its products' input
//   manifests name (a hash, not the path: a collision only makes a query
//   read a build it did not need, which it then finds does not name the
//   path). It also names the builds it could not take whole (an index
//   being written, a manifest that cannot be read): those are read
//   whatever the path. And it says how far `builds.recent` went when its
//   scan began (the file's device, inode and size).
//
// - `builds.recent`, appended by every write of events, after the events
//   (the last of that call's appends, taken back with them): one line per
//   call naming its build. What the index's mark covers was written before
//   the scan began, so the scan saw it; every other line, and a file with
//   another inode, is a build changed since, read whatever the path.
//   Once the new index is in place, gc keeps only the lines after the mark
//   (replace_locked: appenders wait, then append to the new file).
//
// A reader opens `builds.recent` before the index: a file it holds that the
// index's mark does not name is read whole, which is at worst more than it
// needed. No index, one that is damaged, or a line of `builds.recent` that
// cannot be read, and the query reads every build, as without one. A writer
// that dies between its events and its line leaves a build the index does
// not know: fsck compares the index with the builds and reports it, and
// --repair writes the index anew.

#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fingerprint::store {

inline constexpr std::string_view k_path_index_file = "paths.index";
inline constexpr std::string_view k_recent_builds_file = "builds.recent";
// Empty; gc and fsck --repair hold its flock() exclusively from the mark
// to the trim, fsck shared while it checks: one index is made at a time,
// and no trim drops lines that another's older mark does not cover.
inline constexpr std::string_view k_path_index_lock = "paths.lock";

// The hash a path is indexed by (FNV-1a over 8-byte words, as the index
// pack's checksum).
uint64_t path_hash(std::string_view path);

// How far builds.recent went: its device, inode and size (all 0: there was
// none, so any file there now is read whole).
struct RecentMark
{
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;

  bool operator==(const RecentMark&) const = default;
};

// One line of builds.recent, without its newline: the project and build,
// percent-encoded as layout::encode_component does, space-separated.
std::string recent_line(const BuildRef& build);
// Its lines; nullopt when one is not such a line (a torn last line too:
// its writer's build would go unread).
std::optional<std::vector<BuildRef>> parse_recent(std::string_view text);

// A path index's contents as gc collects them, and their encoding.
class PathIndexBuilder
{
public:
  explicit PathIndexBuilder(RecentMark mark)
    : m_mark(mark)
  {
  }
  // Adds a build (in list_builds() order) and returns its number.
  uint32_t add_build(const BuildRef& build);
  // `build` names `path` in an event, or (`through_inputs`) as an input of
  // one of its products' manifests.
  void add_path(uint32_t build, std::string_view path, bool through_inputs);
  void add_hash(uint32_t build, uint64_t hash, bool through_inputs);
  // A build the index could not take whole: read by every query.
  void read_always(uint32_t build);

  const RecentMark&
  mark() const
  {
    return m_mark;
  }
  const std::vector<BuildRef>&
  builds() const
  {
    return m_builds;
  }
  const std::vector<uint32_t>&
  always() const
  {
    return m_always;
  }
  // As PathIndex::entries_by_build() would read them once encoded.
  std::vector<std::vector<uint64_t>> entries_by_build() const;
  // The file's bytes.
  std::string encode();

private:
  RecentMark m_mark;
  std::vector<BuildRef> m_builds;
  std::vector<uint32_t> m_always;
  std::vector<std::pair<uint64_t, uint32_t>> m_entries; // hash, build | flag
};

// A path index as read: its header and build table checked, its buckets
// read on demand from the open file.
class PathIndex
{
public:
  // Set on a build number: the build names the path as a manifest input
  // (a query then reads its products' manifests too).
  static constexpr uint32_t k_through_inputs = 0x8000'0000U;

  // Reads and checks the file open as `fd`; an error says what is wrong.
  static Expected<PathIndex> open(util::Fd fd, std::string display);

  const RecentMark&
  mark() const
  {
    return m_mark;
  }
  size_t
  build_count() const
  {
    return m_offsets.size() - 1;
  }
  BuildRef build(uint32_t number) const;
  const std::vector<uint32_t>&
  always() const
  {
    return m_always;
  }
  // The builds (numbers with k_through_inputs) indexed under `hash`; an
  // error when its bucket is damaged.
  Expected<void> builds_at(uint64_t hash, std::vector<uint32_t>& out) const;
  // Every entry, build by build (fsck): per build, its hashes' low 32 bits
  // shifted left by one with the through-inputs bit as the lowest, sorted.
  Expected<std::vector<std::vector<uint64_t>>> entries_by_build() const;

private:
  util::Fd m_fd;
  std::string m_display;
  RecentMark m_mark;
  uint32_t m_bits = 0;
  uint64_t m_entries = 0;
  uint64_t m_table_at = 0;
  uint64_t m_entries_at = 0;
  std::string m_names;
  std::vector<uint32_t> m_offsets;
  std::vector<uint32_t> m_always;
};

} // namespace fingerprint::store
