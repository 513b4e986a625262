#include <fingerprint/store/index_pack.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/path_index.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

// The file (all numbers little-endian):
//
//   "fingerprint-path-index 1\n"
//   u64 device, u64 inode, u64 size        builds.recent when the scan began
//   u32 bucket bits, u32 builds, u32 always, u32 names' bytes, u64 entries
//   u32 offset of each build's name, and one past the last
//   the names: "<project> <build>" each, percent-encoded
//   u32 each build read always
//   u64 checksum of everything above
//   per bucket: u32 its first entry, u32 checksum of its entries; then u32
//   the number of entries
//   per entry: u32 the low half of the path's hash, u32 the build's number
//   (k_through_inputs set when the path is a manifest input), sorted
//
// A bucket is the hash's top `bits` bits. A lookup reads the head (about
// 30 bytes a build), 12 bytes of the table and one bucket (16 entries on
// average).

namespace {

constexpr std::string_view k_magic = "fingerprint-path-index 1\n";
constexpr size_t k_fixed = k_magic.size() + 3 * 8 + 4 * 4 + 8;

void
put32(std::string& out, uint32_t value)
{
  for (int i = 0; i < 4; ++i) {
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

void
put64(std::string& out, uint64_t value)
{
  for (int i = 0; i < 8; ++i) {
    out += static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

uint32_t
get32(std::string_view in, size_t at)
{
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(in[at + i]);
  }
  return value;
}

uint64_t
get64(std::string_view in, size_t at)
{
  return get32(in, at) | (static_cast<uint64_t>(get32(in, at + 4)) << 32);
}

uint32_t
bucket_of(uint64_t hash, uint32_t bits)
{
  return static_cast<uint32_t>(hash >> (64 - bits));
}

uint32_t
bucket_checksum(std::string_view bytes)
{
  return static_cast<uint32_t>(pack_checksum(bytes));
}

// pread of exactly `size` bytes at `offset`.
Expected<std::string>
read_at(int fd, uint64_t offset, size_t size, const std::string& display)
{
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      return make_error(display, util::errno_text(errno));
    }
    if (got == 0) {
      return make_error(display, "cut short (" + std::to_string(offset + done) + " bytes)");
    }
    done += static_cast<size_t>(got);
  }
  return bytes;
}

} // namespace

uint64_t
path_hash(std::string_view path)
{
  // The finalizer of MurmurHash3 over FNV-1a: the bucket is the top bits,
  // which FNV alone leaves poorly mixed for paths that differ at the end.
  uint64_t hash = pack_checksum(path);
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdULL;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ULL;
  hash ^= hash >> 33;
  return hash;
}

std::string
recent_line(const BuildRef& build)
{
  return layout::encode_component(build.project) + ' ' + layout::encode_component(build.build);
}

std::optional<std::vector<BuildRef>>
parse_recent(std::string_view text)
{
  std::vector<BuildRef> builds;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      return std::nullopt; // torn
    }
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size()
        || line.find(' ', space + 1) != std::string_view::npos) {
      return std::nullopt;
    }
    const std::string_view project = line.substr(0, space);
    const std::string_view build = line.substr(space + 1);
    // Only what encode_component() writes.
    auto encoded = [](std::string_view component) {
      return std::all_of(component.begin(), component.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
               || c == '+' || c == '-' || c == '%';
      });
    };
    if (!encoded(project) || !encoded(build)) {
      return std::nullopt;
    }
    builds.push_back({layout::decode_component(project), layout::decode_component(build)});
  }
  return builds;
}

uint32_t
PathIndexBuilder::add_build(const BuildRef& build)
{
  m_builds.push_back(build);
  return static_cast<uint32_t>(m_builds.size() - 1);
}

void
PathIndexBuilder::add_path(uint32_t build, std::string_view path, bool through_inputs)
{
  add_hash(build, path_hash(path), through_inputs);
}

void
PathIndexBuilder::add_hash(uint32_t build, uint64_t hash, bool through_inputs)
{
  m_entries.emplace_back(hash, build | (through_inputs ? PathIndex::k_through_inputs : 0));
}

void
PathIndexBuilder::read_always(uint32_t build)
{
  m_always.push_back(build);
}

std::vector<std::vector<uint64_t>>
PathIndexBuilder::entries_by_build() const
{
  std::vector<std::vector<uint64_t>> by_build(m_builds.size());
  for (const auto& [hash, build] : m_entries) {
    by_build[build & ~PathIndex::k_through_inputs].push_back((uint64_t{static_cast<uint32_t>(hash)} << 1)
                                                             | ((build & PathIndex::k_through_inputs) != 0 ? 1 : 0));
  }
  for (auto& entries : by_build) {
    std::sort(entries.begin(), entries.end());
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  }
  return by_build;
}

std::string
PathIndexBuilder::encode()
{
  // Sixteen entries a bucket on average, at least 16 buckets.
  uint32_t bits = 4;
  while (bits < 28 && (uint64_t{1} << bits) * 16 < m_entries.size()) {
    ++bits;
  }
  auto order = [bits](const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) {
    const auto key = [bits](const std::pair<uint64_t, uint32_t>& e) {
      return std::tuple(
        bucket_of(e.first, bits), static_cast<uint32_t>(e.first), e.second & ~PathIndex::k_through_inputs, e.first);
    };
    return key(a) < key(b);
  };
  std::sort(m_entries.begin(), m_entries.end(), order);
  // One entry per (bucket, low hash, build), the flag of any of them.
  std::vector<std::pair<uint64_t, uint32_t>> unique;
  unique.reserve(m_entries.size());
  for (const auto& entry : m_entries) {
    if (!unique.empty() && bucket_of(unique.back().first, bits) == bucket_of(entry.first, bits)
        && static_cast<uint32_t>(unique.back().first) == static_cast<uint32_t>(entry.first)
        && (unique.back().second & ~PathIndex::k_through_inputs) == (entry.second & ~PathIndex::k_through_inputs)) {
      unique.back().second |= entry.second;
      continue;
    }
    unique.push_back(entry);
  }
  m_entries = std::move(unique);
  std::sort(m_always.begin(), m_always.end());
  m_always.erase(std::unique(m_always.begin(), m_always.end()), m_always.end());

  std::string names;
  std::vector<uint32_t> offsets;
  for (const BuildRef& build : m_builds) {
    offsets.push_back(static_cast<uint32_t>(names.size()));
    names += recent_line(build);
  }
  offsets.push_back(static_cast<uint32_t>(names.size()));

  std::string out(k_magic);
  put64(out, m_mark.device);
  put64(out, m_mark.inode);
  put64(out, m_mark.size);
  put32(out, bits);
  put32(out, static_cast<uint32_t>(m_builds.size()));
  put32(out, static_cast<uint32_t>(m_always.size()));
  put32(out, static_cast<uint32_t>(names.size()));
  put64(out, m_entries.size());
  for (const uint32_t offset : offsets) {
    put32(out, offset);
  }
  out += names;
  for (const uint32_t build : m_always) {
    put32(out, build);
  }
  put64(out, pack_checksum(out));

  std::string entries;
  entries.reserve(m_entries.size() * 8);
  for (const auto& [hash, build] : m_entries) {
    put32(entries, static_cast<uint32_t>(hash));
    put32(entries, build);
  }
  const uint32_t buckets = uint32_t{1} << bits;
  size_t at = 0;
  for (uint32_t bucket = 0; bucket < buckets; ++bucket) {
    const size_t first = at;
    while (at < m_entries.size() && bucket_of(m_entries[at].first, bits) == bucket) {
      ++at;
    }
    put32(out, static_cast<uint32_t>(first));
    put32(out, bucket_checksum(std::string_view(entries).substr(first * 8, (at - first) * 8)));
  }
  put32(out, static_cast<uint32_t>(m_entries.size()));
  out += entries;
  return out;
}

Expected<PathIndex>
PathIndex::open(util::Fd fd, std::string display)
{
  PathIndex index;
  index.m_display = std::move(display);
  struct stat st
  {};
  if (::fstat(fd.get(), &st) != 0) {
    return make_error(index.m_display, util::errno_text(errno));
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  auto fixed = read_at(fd.get(), 0, std::min<uint64_t>(k_fixed, file_size), index.m_display);
  if (!fixed) {
    return fixed.error();
  }
  if (fixed->size() < k_fixed || !fixed->starts_with(k_magic)) {
    return make_error(index.m_display, "not a path index of this format");
  }
  size_t at = k_magic.size();
  index.m_mark = {get64(*fixed, at), get64(*fixed, at + 8), get64(*fixed, at + 16)};
  at += 24;
  index.m_bits = get32(*fixed, at);
  const uint64_t builds = get32(*fixed, at + 4);
  const uint64_t always = get32(*fixed, at + 8);
  const uint64_t names = get32(*fixed, at + 12);
  index.m_entries = get64(*fixed, at + 16);
  // Each count is at most 32 bits but the entries', so no sum below wraps
  // once that one is bounded by the file's size.
  const uint64_t head = k_fixed + 4 * (builds + 1) + names + 4 * always + 8;
  index.m_table_at = head;
  index.m_entries_at = head + 8 * (uint64_t{1} << std::min<uint32_t>(index.m_bits, 28)) + 4;
  if (index.m_bits < 4 || index.m_bits > 28 || builds >= k_through_inputs || index.m_entries > file_size / 8
      || index.m_entries_at + 8 * index.m_entries != file_size) {
    return make_error(index.m_display, "damaged (its sizes do not add up to the file's)");
  }
  auto bytes = read_at(fd.get(), 0, head, index.m_display);
  if (!bytes) {
    return bytes.error();
  }
  if (get64(*bytes, head - 8) != pack_checksum(std::string_view(*bytes).substr(0, head - 8))) {
    return make_error(index.m_display, "damaged (its checksum does not match its head)");
  }
  at = k_fixed;
  for (uint64_t i = 0; i <= builds; ++i, at += 4) {
    index.m_offsets.push_back(get32(*bytes, at));
    if (index.m_offsets.back() > names || (i > 0 && index.m_offsets.back() < index.m_offsets[i - 1])) {
      return make_error(index.m_display, "damaged (a build's name is out of bounds)");
    }
  }
  index.m_names = bytes->substr(at, names);
  at += names;
  for (uint64_t i = 0; i < always; ++i, at += 4) {
    index.m_always.push_back(get32(*bytes, at));
    if (index.m_always.back() >= builds) {
      return make_error(index.m_display, "damaged (a build number is out of bounds)");
    }
  }
  index.m_fd = std::move(fd);
  return index;
}

BuildRef
PathIndex::build(uint32_t number) const
{
  const std::string_view name =
    std::string_view(m_names).substr(m_offsets[number], m_offsets[number + 1] - m_offsets[number]);
  const size_t space = name.find(' ');
  return {layout::decode_component(name.substr(0, space)),
          layout::decode_component(space == std::string_view::npos ? std::string_view() : name.substr(space + 1))};
}

Expected<void>
PathIndex::builds_at(uint64_t hash, std::vector<uint32_t>& out) const
{
  const uint32_t bucket = bucket_of(hash, m_bits);
  auto table = read_at(m_fd.get(), m_table_at + 8 * uint64_t{bucket}, 12, m_display);
  if (!table) {
    return table.error();
  }
  const uint32_t first = get32(*table, 0);
  const uint32_t sum = get32(*table, 4);
  const uint32_t end = get32(*table, 8);
  if (first > end || end > m_entries) {
    return make_error(m_display, "damaged (bucket " + std::to_string(bucket) + " is out of bounds)");
  }
  auto entries = read_at(m_fd.get(), m_entries_at + 8 * uint64_t{first}, 8 * size_t{end - first}, m_display);
  if (!entries) {
    return entries.error();
  }
  if (bucket_checksum(*entries) != sum) {
    return make_error(m_display, "damaged (bucket " + std::to_string(bucket) + " does not match its checksum)");
  }
  const auto low = static_cast<uint32_t>(hash);
  for (size_t at = 0; at < entries->size(); at += 8) {
    if (get32(*entries, at) != low) {
      continue;
    }
    const uint32_t build = get32(*entries, at + 4);
    if ((build & ~k_through_inputs) >= build_count()) {
      return make_error(m_display, "damaged (a build number is out of bounds)");
    }
    out.push_back(build);
  }
  return {};
}

Expected<std::vector<std::vector<uint64_t>>>
PathIndex::entries_by_build() const
{
  auto table = read_at(m_fd.get(), m_table_at, m_entries_at - m_table_at, m_display);
  if (!table) {
    return table.error();
  }
  auto entries = read_at(m_fd.get(), m_entries_at, 8 * m_entries, m_display);
  if (!entries) {
    return entries.error();
  }
  std::vector<std::vector<uint64_t>> by_build(build_count());
  const uint32_t buckets = uint32_t{1} << m_bits;
  for (uint32_t bucket = 0; bucket < buckets; ++bucket) {
    const uint32_t first = get32(*table, 8 * size_t{bucket});
    const uint32_t end = get32(*table, 8 * size_t{bucket} + 8);
    if (first > end || end > m_entries
        || bucket_checksum(std::string_view(*entries).substr(8 * size_t{first}, 8 * size_t{end - first}))
             != get32(*table, 8 * size_t{bucket} + 4)) {
      return make_error(m_display, "damaged (bucket " + std::to_string(bucket) + " does not match its checksum)");
    }
  }
  for (size_t at = 0; at < entries->size(); at += 8) {
    const uint32_t build = get32(*entries, at + 4);
    const uint32_t number = build & ~k_through_inputs;
    if (number >= build_count()) {
      return make_error(m_display, "damaged (a build number is out of bounds)");
    }
    by_build[number].push_back((uint64_t{get32(*entries, at)} << 1) | ((build & k_through_inputs) != 0 ? 1 : 0));
  }
  for (auto& hashes : by_build) {
    std::sort(hashes.begin(), hashes.end());
  }
  return by_build;
}

} // namespace fingerprint::store

// The directory store's side.

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/log_io.hpp>

#include <deque>
#include <fcntl.h>
#include <set>
#include <sys/file.h>

namespace fingerprint::store {

namespace {

RecentMark
mark_of(const struct stat& st)
{
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size)};
}

// The lines of the open builds.recent that `mark` does not cover: after
// its size when it is that file, else all of them.
Expected<std::string>
uncovered_text(int fd, const RecentMark& mark, const std::string& display)
{
  struct stat st
  {};
  if (::fstat(fd, &st) != 0) {
    return make_error(display, util::errno_text(errno));
  }
  const RecentMark now = mark_of(st);
  const uint64_t from = now.device == mark.device && now.inode == mark.inode ? mark.size : 0;
  if (from > now.size) {
    return make_error(display, "shorter than the path index says it was");
  }
  return read_at(fd, from, now.size - from, display);
}

} // namespace

RecentMark
DirectoryStore::recent_mark() const
{
  struct stat st
  {};
  if (!m_root_fd
      || ::fstatat(m_root_fd.get(), std::string(k_recent_builds_file).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return {};
  }
  return mark_of(st);
}

Expected<void>
DirectoryStore::write_path_index(PathIndexBuilder& paths) const
{
  // An older store is raised to format 4 first: a runner of format 3 would
  // write builds without naming them in builds.recent.
  if (auto raised = detail::ensure_format_file(m_root_fd.get(), m_root); !raised) {
    return raised.error();
  }
  const std::string name(k_path_index_file);
  if (auto written = write_root_file(name, paths.encode()); !written) {
    return written.error();
  }
  const RecentMark mark = paths.mark();
  if (mark.inode == 0) {
    return {};
  }
  // The index in place, what its mark covers can go: appenders wait for the
  // lock, then append to the new file. The new file is made while the old
  // one is there, so it never has the inode of a mark still in use.
  const std::string recent(k_recent_builds_file);
  auto trimmed =
    detail::replace_locked(m_root_fd.get(),
                           recent,
                           m_root + "/" + recent,
                           layout::TempTag::compact,
                           true,
                           [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
                             struct stat st
                             {};
                             detail::Replacement replacement;
                             if (::fstat(log.fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != mark.device
                                 || static_cast<uint64_t>(st.st_ino) != mark.inode || log.text.size() < mark.size) {
                               return replacement; // another gc's: kept
                             }
                             // Replaced even when nothing is left, never removed: a file made
                             // anew by an appender could have the inode the index's mark names.
                             replacement.text = log.text.substr(mark.size);
                             replacement.action = detail::Replacement::Action::replace;
                             return replacement;
                           });
  if (!trimmed && !trimmed.error().message.ends_with("no such log")) {
    return trimmed.error();
  }
  return {};
}

std::optional<Store::BuildsAtPaths>
DirectoryStore::builds_at_paths(const std::vector<std::string>& paths) const
{
  if (!m_root_fd) {
    return std::nullopt;
  }
  // builds.recent before the index (path_index.hpp).
  const std::string recent_display = m_root + "/" + std::string(k_recent_builds_file);
  auto recent = detail::open_below(m_root_fd.get(), std::string(k_recent_builds_file), O_RDONLY | O_NONBLOCK, false);
  auto index_fd = detail::open_below(m_root_fd.get(), std::string(k_path_index_file), O_RDONLY | O_NONBLOCK, false);
  if (!recent || !index_fd || !index_fd->valid()) {
    return std::nullopt;
  }
  auto index = PathIndex::open(std::move(*index_fd), m_root + "/" + std::string(k_path_index_file));
  if (!index) {
    return std::nullopt; // fsck says what is wrong with it
  }
  std::map<std::pair<std::string, std::string>, bool> found; // sorted as list_builds() sorts
  auto add = [&](const BuildRef& build, bool through_inputs) {
    auto [it, first] = found.try_emplace({build.project, build.build}, through_inputs);
    it->second = it->second || through_inputs;
  };
  if (recent->valid()) {
    auto text = uncovered_text(recent->get(), index->mark(), recent_display);
    auto changed = text ? parse_recent(*text) : std::nullopt;
    if (!changed) {
      return std::nullopt;
    }
    for (const BuildRef& build : *changed) {
      add(build, true);
    }
  }
  for (const uint32_t build : index->always()) {
    add(index->build(build), true);
  }
  std::vector<uint32_t> numbers;
  for (const std::string& path : paths) {
    if (!index->builds_at(path_hash(path), numbers)) {
      return std::nullopt;
    }
  }
  for (const uint32_t number : numbers) {
    add(index->build(number & ~PathIndex::k_through_inputs), (number & PathIndex::k_through_inputs) != 0);
  }
  BuildsAtPaths result;
  for (auto& [build, through_inputs] : found) {
    result.builds.push_back({build.first, build.second});
    result.through_inputs.push_back(through_inputs);
  }
  return result;
}

void
DirectoryStore::check_path_index(FsckReport& report, bool repair) const
{
  if (!exists()) {
    return;
  }
  const std::string relative(k_path_index_file);
  const std::string recent_relative(k_recent_builds_file);
  // No index is made or trimmed meanwhile. builds.recent before the index,
  // as a query opens them; read after the scan, so that a build written
  // meanwhile is among the lines.
  // A check makes no lock file (it may be of a store it can only read).
  const util::Fd held = detail::lock_file(m_root_fd.get(), k_path_index_lock, repair ? LOCK_EX : LOCK_SH, repair);
  auto recent = detail::open_below(m_root_fd.get(), recent_relative, O_RDONLY | O_NONBLOCK, false);
  auto index_fd = detail::open_below(m_root_fd.get(), relative, O_RDONLY | O_NONBLOCK, false);
  if (!repair && index_fd && !index_fd->valid()) {
    return; // none to check, none to write
  }
  // What the index would hold now, from every build.
  PathIndexBuilder fresh(recent_mark());
  {
    std::deque<std::string> texts;
    std::vector<PackedManifest> manifests;
    if (auto scanned = packable_builds(texts, manifests, &fresh); !scanned) {
      report.findings.push_back({relative, 0, "cannot be checked: " + scanned.error().message, FsckKind::damage, {}});
      return;
    }
  }
  const size_t first_finding = report.findings.size();
  if (!index_fd) {
    report.findings.push_back({relative, 0, index_fd.error().message, FsckKind::damage, {}});
  }
  const bool had_one = index_fd && index_fd->valid();
  if (had_one) {
    auto index = PathIndex::open(std::move(*index_fd), m_root + "/" + relative);
    auto stored = index ? index->entries_by_build() : Expected<std::vector<std::vector<uint64_t>>>(index.error());
    if (!stored) {
      report.findings.push_back({relative, 0, stored.error().message, FsckKind::damage, {}});
    } else {
      // The builds changed since its scan, which a query reads whole.
      std::set<std::pair<std::string, std::string>> excused;
      auto read_changed = [&]() -> Expected<std::optional<std::vector<BuildRef>>> {
        if (!recent || !recent->valid()) {
          return std::optional<std::vector<BuildRef>>(std::vector<BuildRef>());
        }
        auto text = uncovered_text(recent->get(), index->mark(), m_root + "/" + recent_relative);
        if (!text) {
          return text.error();
        }
        return parse_recent(*text);
      };
      auto changed = read_changed();
      if (!changed || !*changed) {
        report.findings.push_back(
          {recent_relative,
           0,
           changed ? "has a line that is not a build's (queries by path read every build)" : changed.error().message,
           FsckKind::damage,
           {}});
      } else {
        for (const BuildRef& build : **changed) {
          excused.emplace(build.project, build.build);
        }
      }
      std::map<std::pair<std::string, std::string>, uint32_t> number_of;
      for (uint32_t n = 0; n < index->build_count(); ++n) {
        const BuildRef build = index->build(n);
        number_of.emplace(std::pair(build.project, build.build), n);
      }
      for (const uint32_t n : index->always()) {
        const BuildRef build = index->build(n);
        excused.emplace(build.project, build.build);
      }
      // Every path a build names now must be indexed for it (as an input
      // when it is one), unless the build is read whole anyway.
      const auto wanted = fresh.entries_by_build();
      const std::set<uint32_t> fresh_always(fresh.always().begin(), fresh.always().end());
      std::vector<std::pair<uint32_t, size_t>> lacking; // build, paths missing
      for (uint32_t n = 0; n < fresh.builds().size(); ++n) {
        const BuildRef& build = fresh.builds()[n];
        if (fresh_always.contains(n) || excused.contains({build.project, build.build}) || wanted[n].empty()) {
          continue;
        }
        auto number = number_of.find({build.project, build.build});
        const std::vector<uint64_t>* have = number != number_of.end() ? &(*stored)[number->second] : nullptr;
        size_t missing = 0;
        for (const uint64_t entry : wanted[n]) {
          if (have == nullptr
              || (!std::binary_search(have->begin(), have->end(), entry)
                  && !std::binary_search(have->begin(), have->end(), entry | 1))) {
            ++missing;
          }
        }
        if (missing > 0) {
          lacking.emplace_back(n, missing);
        }
      }
      // A writer between its events (which the scan saw) and its line holds
      // the change lock shared until its line is written: once the lock is
      // this check's (bounded, as fsck's repair takes it; busy writers may
      // keep it shared), the build is named, unless its writer stopped there.
      util::Fd quiet;
      for (int attempt = 0; !lacking.empty() && attempt < 100 && !quiet; ++attempt) {
        quiet = detail::lock_file(m_root_fd.get(), layout::k_change_lock, LOCK_EX | LOCK_NB, repair);
        if (!quiet) {
          ::usleep(10'000);
        }
      }
      if (auto again = lacking.empty() ? changed : read_changed(); again && *again) {
        std::set<std::pair<std::string, std::string>> named;
        for (const BuildRef& build : **again) {
          named.emplace(build.project, build.build);
        }
        std::erase_if(lacking, [&](const std::pair<uint32_t, size_t>& item) {
          return named.contains({fresh.builds()[item.first].project, fresh.builds()[item.first].build});
        });
      }
      for (const auto& [n, missing] : lacking) {
        const BuildRef& build = fresh.builds()[n];
        report.findings.push_back({relative,
                                   0,
                                   "build " + build.build + " of " + build.project + ": " + std::to_string(missing)
                                     + " of the " + std::to_string(wanted[n].size())
                                     + " paths it names are not in it, and " + recent_relative
                                     + " does not name the build (a writer stopped after its events?)",
                                   FsckKind::damage,
                                   {}});
      }
    }
  }
  if (!repair || (!had_one && fresh.builds().empty())) {
    return;
  }
  auto written = write_path_index(fresh);
  for (size_t f = first_finding; f < report.findings.size(); ++f) {
    if (written) {
      report.findings[f].repair = "written anew from " + std::to_string(fresh.builds().size()) + " build indexes";
      ++report.repaired;
    } else {
      report.findings[f].problem += " (not repaired: " + written.error().message + ")";
    }
  }
}

} // namespace fingerprint::store
