#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/index_pack.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/text.hpp>

#include <charconv>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <set>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace fingerprint::store {

namespace {

constexpr std::string_view k_magic = "fingerprint-index-pack 1\n";

std::string
build_key(const BuildRef& ref)
{
  return ref.project + '\0' + ref.build;
}

} // namespace

// FNV-1a over 8-byte words (then the last bytes one by one): the pack is
// about 125 bytes an artifact, and byte-wise FNV would cost a query at a
// million artifacts 0.15 s where this costs 0.02 s. It tells a file cut
// short or changed by accident from a whole one; it is no defence against
// someone who can write the store, who could as well write the indexes.
uint64_t
pack_checksum(std::string_view text)
{
  uint64_t hash = 0xcbf29ce484222325ULL;
  size_t at = 0;
  for (; at + 8 <= text.size(); at += 8) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + at, 8);
    hash ^= word;
    hash *= 0x100000001b3ULL;
  }
  for (; at < text.size(); ++at) {
    hash ^= static_cast<unsigned char>(text[at]);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string
encode_index_pack(const std::vector<PackedBuild>& builds, const std::vector<PackedManifest>& manifests)
{
  std::string text(k_magic);
  for (const PackedBuild& b : builds) {
    text += "b " + layout::encode_component(b.ref.project) + ' ' + layout::encode_component(b.ref.build) + ' '
            + std::to_string(b.stamp.size) + ' ' + std::to_string(b.stamp.inode) + ' '
            + std::to_string(b.stamp.mtime_ns) + ' ' + std::to_string(b.stamp.ctime_ns) + ' '
            + std::to_string(b.bytes.size()) + '\n';
    text += b.bytes;
    text += '\n';
  }
  for (const PackedManifest& m : manifests) {
    text += "m " + m.key.str() + ' ' + std::to_string(m.bytes.size()) + '\n';
    text += m.bytes;
    // A manifest is binary: the newline after every record is what lets
    // the end line be found as the text after the last one.
    text += '\n';
  }
  text += "end " + std::to_string(builds.size() + manifests.size()) + ' ' + util::hex64(pack_checksum(text)) + '\n';
  return text;
}

Expected<std::shared_ptr<const IndexPack>>
IndexPack::parse(std::string text)
{
  auto pack = std::make_shared<IndexPack>();
  pack->m_text = std::move(text);
  const std::string_view all = pack->m_text;
  return parse_all(std::move(pack), all);
}

// Mapped, not read: at a million artifacts the pack is about 110 MB, and
// reading it into a string (zeroed by its resize, then copied from the page
// cache, a page fault a page) was a fifth of `graph`'s time.
Expected<std::shared_ptr<const IndexPack>>
IndexPack::map(int fd, size_t size, bool& mapped)
{
  mapped = false;
  void* bytes = size == 0 ? MAP_FAILED : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (bytes == MAP_FAILED) {
    return std::shared_ptr<const IndexPack>();
  }
  mapped = true;
  auto pack = std::make_shared<IndexPack>();
  pack->m_mapping = bytes;
  pack->m_mapping_size = size;
  return parse_all(std::move(pack), std::string_view(static_cast<const char*>(bytes), size));
}

IndexPack::~IndexPack()
{
  if (m_mapping != nullptr) {
    ::munmap(m_mapping, m_mapping_size);
  }
}

Expected<std::shared_ptr<const IndexPack>>
IndexPack::parse_all(std::shared_ptr<IndexPack> pack, std::string_view all)
{
  if (!all.starts_with(k_magic)) {
    return Error{"not an index pack (its first line is not \"" + std::string(k_magic.substr(0, k_magic.size() - 1))
                 + "\")"};
  }
  if (!all.ends_with('\n') || all.size() < k_magic.size() + 1) {
    return Error{"cut short (no end line)"};
  }
  const size_t end_at = all.rfind('\n', all.size() - 2);
  if (end_at == std::string_view::npos || end_at + 1 < k_magic.size()) {
    return Error{"cut short (no end line)"};
  }
  const std::string_view body = all.substr(0, end_at + 1);
  const auto end = util::split_spaces(all.substr(end_at + 1, all.size() - end_at - 2));
  size_t count = 0;
  if (end.size() != 3 || end[0] != "end" || !util::parse_number(end[1], count)) {
    return Error{"cut short (no end line)"};
  }
  if (end[2] != util::hex64(pack_checksum(body))) {
    return Error{"damaged (its checksum does not match its records)"};
  }
  size_t at = k_magic.size();
  size_t records = 0;
  while (at < body.size()) {
    const size_t newline = body.find('\n', at);
    const auto words = util::split_spaces(body.substr(at, newline - at));
    const std::string where = "record " + std::to_string(records + 1);
    at = newline + 1;
    size_t length = 0;
    if (words.size() == 8 && words[0] == "b") {
      PackedBuild b;
      if (!util::parse_number(words[3], b.stamp.size) || !util::parse_number(words[4], b.stamp.inode)
          || !util::parse_number(words[5], b.stamp.mtime_ns) || !util::parse_number(words[6], b.stamp.ctime_ns)
          || !util::parse_number(words[7], length) || length >= body.size() - at) {
        return Error{where + " does not read"};
      }
      b.ref.project = layout::decode_component(words[1]);
      b.ref.build = layout::decode_component(words[2]);
      b.bytes = body.substr(at, length);
      pack->m_build_at.emplace(build_key(b.ref), pack->m_builds.size());
      pack->m_builds.push_back(std::move(b));
    } else if (words.size() == 3 && words[0] == "m") {
      auto key = parse_digest_key(words[1]);
      if (!key || !util::parse_number(words[2], length) || length >= body.size() - at) {
        return Error{where + " does not read"};
      }
      pack->m_manifest_at.emplace(key->str(), pack->m_manifests.size());
      pack->m_manifests.push_back({*key, body.substr(at, length)});
    } else {
      return Error{where + " does not read"};
    }
    at += length;
    if (at >= body.size() || body[at] != '\n') {
      return Error{where + " does not read"};
    }
    ++at;
    ++records;
  }
  if (records != count) {
    return Error{"damaged (its end line counts " + std::to_string(count) + " records, it holds "
                 + std::to_string(records) + ")"};
  }
  return std::shared_ptr<const IndexPack>(std::move(pack));
}

const PackedBuild*
IndexPack::build(const BuildRef& ref) const
{
  auto it = m_build_at.find(build_key(ref));
  return it == m_build_at.end() ? nullptr : &m_builds[it->second];
}

std::optional<std::string_view>
IndexPack::manifest(const DigestKey& key) const
{
  auto it = m_manifest_at.find(key.str());
  if (it == m_manifest_at.end()) {
    return std::nullopt;
  }
  return m_manifests[it->second].bytes;
}

// The directory store's side.

Expected<std::optional<std::string>>
DirectoryStore::read_index_pack() const
{
  if (!m_root_fd) {
    return std::optional<std::string>();
  }
  return read_whole(std::string(k_index_pack_file));
}

std::shared_ptr<const IndexPack>
DirectoryStore::load_index_pack() const
{
  if (!m_root_fd) {
    return nullptr;
  }
  auto fd = detail::open_below(m_root_fd.get(), std::string(k_index_pack_file), O_RDONLY | O_NONBLOCK, false);
  struct stat st
  {};
  if (!fd || !fd->valid() || ::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return nullptr;
  }
  bool mapped = false;
  auto pack = IndexPack::map(fd->get(), static_cast<size_t>(st.st_size), mapped);
  if (!mapped) {
    auto bytes = util::read_all(fd->get());
    if (!bytes) {
      return nullptr;
    }
    pack = IndexPack::parse(std::move(*bytes));
  }
  return pack ? *pack : nullptr;
}

const IndexPack*
DirectoryStore::index_pack() const
{
  if (!m_pack_tried) {
    m_pack_tried = true;
    // Absent or unusable: answered from the files, as without one (fsck
    // says what is wrong with it).
    m_pack = load_index_pack();
  }
  return m_pack.get();
}

Expected<void>
DirectoryStore::for_each_build(const std::string& project, const BuildVisitor& each) const
{
  auto builds = list_builds();
  if (!builds) {
    return builds.error();
  }
  const IndexPack* pack = index_pack();
  for (const auto& build : *builds) {
    if (!project.empty() && build.project != project) {
      continue;
    }
    // Stat before using the copy: an index appended to or rewritten since
    // the pack was written no longer has its stamp, and is read.
    const PackedBuild* packed = pack != nullptr ? pack->build(build) : nullptr;
    if (packed != nullptr) {
      if (const auto stamp = build_stamp(build); stamp && *stamp == packed->stamp) {
        LogContents contents;
        detail::parse_lines(packed->bytes, layout::build_index(build), contents);
        each(build, contents);
        continue;
      }
    }
    auto contents = read_build(build);
    if (!contents) {
      return contents.error();
    }
    each(build, *contents);
  }
  return {};
}

Expected<std::vector<PackedBuild>>
DirectoryStore::packable_builds(std::deque<std::string>& texts,
                                std::vector<PackedManifest>& manifests,
                                PathIndexBuilder* paths) const
{
  std::vector<PackedBuild> builds;
  auto refs = list_builds();
  if (!refs) {
    return refs.error();
  }
  // Per manifest named: the hashes of its inputs' paths (nullopt: it could
  // not be read, and the builds naming it are read always).
  std::unordered_map<std::string, std::optional<std::vector<uint64_t>>> named;
  for (const BuildRef& ref : *refs) {
    const uint32_t number = paths != nullptr ? paths->add_build(ref) : 0;
    auto skip = [&] {
      if (paths != nullptr) {
        paths->read_always(number);
      }
    };
    const std::string relative = layout::build_index(ref);
    const auto stamp = build_stamp(ref);
    if (!stamp) {
      skip();
      continue;
    }
    auto bytes = read_whole(relative);
    // Only an index read whole between two equal stamps, every line of it
    // readable: a copy the stamp does not vouch for would be wrong.
    if (!bytes || !*bytes) {
      skip();
      continue;
    }
    if (const auto after = build_stamp(ref); !after || !(*after == *stamp) || after->size != (*bytes)->size()) {
      skip();
      continue;
    }
    LogContents contents;
    detail::parse_lines(**bytes, relative, contents);
    if (!contents.problems.empty() || contents.torn_tail) {
      skip();
      continue;
    }
    texts.push_back(std::move(**bytes));
    builds.push_back({ref, *stamp, texts.back()});
    for (const Event& event : contents.events) {
      if (paths != nullptr) {
        paths->add_path(number, event.path, false);
      }
      if (event.event != EventKind::produced || event.inputs.empty()) {
        continue;
      }
      auto [it, first] = named.try_emplace(event.inputs);
      if (first) {
        auto key = parse_digest_key(event.inputs);
        auto manifest =
          key ? read_whole(layout::manifest_file(*key)) : Expected<std::optional<std::string>>(key.error());
        // Only the bytes the name is the digest of: a damaged manifest is
        // fsck's to report, not the pack's to keep.
        auto named_key =
          manifest && *manifest ? manifest_key(key->algorithm, **manifest) : Expected<DigestKey>(Error{"no manifest"});
        auto decoded = named_key && *named_key == *key ? decode_manifest(**manifest, event.inputs)
                                                       : Expected<Manifest>(Error{"not the manifest of its name"});
        if (decoded) {
          std::vector<uint64_t> hashes;
          hashes.reserve(decoded->entries.size());
          for (const ManifestEntry& entry : decoded->entries) {
            hashes.push_back(path_hash(entry.path));
          }
          it->second = std::move(hashes);
          texts.push_back(std::move(**manifest));
          manifests.push_back({*key, texts.back()});
        }
      }
      if (paths == nullptr) {
        continue;
      }
      if (!it->second) {
        skip();
        continue;
      }
      for (const uint64_t hash : *it->second) {
        paths->add_hash(number, hash, true);
      }
    }
  }
  return builds;
}

Expected<bool>
DirectoryStore::refresh_index_pack() const
{
  if (!exists()) {
    return false;
  }
  std::deque<std::string> texts; // what the views point into: a deque never moves its elements
  std::vector<PackedManifest> manifests;
  // Where builds.recent ends before the scan: what is before was written
  // before the scan began (path_index.hpp).
  const util::Fd held = detail::lock_file(m_root_fd.get(), k_path_index_lock, LOCK_EX);
  PathIndexBuilder paths(recent_mark());
  auto builds = packable_builds(texts, manifests, &paths);
  if (!builds) {
    return builds.error();
  }
  auto written = write_root_file(std::string(k_index_pack_file), encode_index_pack(*builds, manifests));
  if (!written) {
    return written.error();
  }
  m_pack_tried = false;
  m_pack.reset();
  if (auto indexed = write_path_index(paths); !indexed) {
    return indexed.error();
  }
  return true;
}

void
DirectoryStore::check_index_pack(FsckReport& report, bool repair) const
{
  if (!exists()) {
    return;
  }
  const std::string relative(k_index_pack_file);
  auto text = read_index_pack();
  if (!text) {
    report.findings.push_back({relative, 0, text.error().message, FsckKind::damage, {}});
    return;
  }
  const size_t first_finding = report.findings.size();
  bool damaged = false;
  if (*text) {
    auto pack = IndexPack::parse(std::move(**text));
    if (!pack) {
      damaged = true;
      report.findings.push_back({relative, 0, pack.error().message, FsckKind::damage, {}});
    } else {
      // A copy is wrong when its file, with the very stamp the copy has,
      // holds other bytes; one whose index was appended to or rewritten
      // since is only out of date (queries read that index's file).
      for (const PackedBuild& b : (*pack)->builds()) {
        const auto stamp = build_stamp(b.ref);
        if (!stamp || !(*stamp == b.stamp)) {
          continue;
        }
        auto bytes = read_whole(layout::build_index(b.ref));
        const auto after = build_stamp(b.ref);
        if (!bytes || !*bytes || !after || !(*after == *stamp)) {
          continue;
        }
        if (**bytes != b.bytes) {
          report.findings.push_back(
            {relative,
             0,
             "the copy of build " + b.ref.build + " of " + b.ref.project + " does not match its build index",
             FsckKind::damage,
             {}});
        }
      }
      // A manifest's copy must be the bytes its name is the digest of
      // (whether or not its file is still there).
      for (const PackedManifest& m : (*pack)->manifests()) {
        auto named = manifest_key(m.key.algorithm, m.bytes);
        if (!named || !(*named == m.key)) {
          report.findings.push_back({relative,
                                     0,
                                     "the copy of manifest " + m.key.str() + " is not the manifest of that name",
                                     FsckKind::damage,
                                     {}});
        }
      }
    }
  }
  if (!repair) {
    return;
  }
  // After the rest of the repair; nothing is lost by replacing it, every
  // copy is made from the files.
  const bool had_one = *text || damaged;
  std::deque<std::string> texts;
  std::vector<PackedManifest> manifests;
  auto builds = packable_builds(texts, manifests);
  if (!builds || (!had_one && builds->empty())) {
    return;
  }
  auto written = write_root_file(relative, encode_index_pack(*builds, manifests));
  m_pack_tried = false;
  m_pack.reset();
  for (size_t f = first_finding; f < report.findings.size(); ++f) {
    if (written) {
      report.findings[f].repair = std::string(damaged ? "replaced: " : "") + "written anew from "
                                  + std::to_string(builds->size()) + " build indexes";
      ++report.repaired;
    } else {
      report.findings[f].problem += " (not repaired: " + written.error().message + ")";
    }
  }
}

} // namespace fingerprint::store
