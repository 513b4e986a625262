#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <new>
#include <zlib.h>

namespace fingerprint::store {

namespace {

constexpr std::string_view k_magic = "fingerprint-manifest 2 ";
// What stores of format 2 before manifests were compressed hold; read still.
constexpr std::string_view k_magic_1 = "fingerprint-manifest 1 ";
static_assert(k_magic.size() == k_magic_1.size());
// Paths are at most PATH_MAX; a count this large is not a manifest.
constexpr uint64_t k_max_entries = 16 * 1024 * 1024;
constexpr uint64_t k_max_path = 4096;

void
put_number(std::string& out, uint64_t value)
{
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

bool
get_number(std::string_view& in, uint64_t& value)
{
  value = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (in.empty()) {
      return false;
    }
    const auto byte = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      return true;
    }
  }
  return false;
}

} // namespace

std::string_view
role_name(Role role)
{
  switch (role) {
    case Role::link:
      return "link";
    case Role::compile:
      return "compile";
    case Role::interface:
      return "interface";
    case Role::declared:
      return "declared";
  }
  return "link";
}

std::optional<Role>
parse_role(std::string_view name)
{
  for (const Role role : k_all_roles) {
    if (role_name(role) == name) {
      return role;
    }
  }
  return std::nullopt;
}

std::optional<Role>
role_of_code(char code)
{
  for (const Role role : k_all_roles) {
    if (static_cast<char>(role) == code) {
      return role;
    }
  }
  return std::nullopt;
}

namespace {

// `in` deflated as compress2 at zlib's default level deflates it, into
// `out`; false when zlib had no memory. The state (about 270 KB: window,
// hash chains, pending buffer) is the thread's, reset for each manifest,
// not set up and freed each time as compress2 does: that was most of what
// encoding a hook's manifest cost. deflateReset leaves the state as
// deflateInit left it, so the bytes are compress2's.
bool
deflate_default(std::string_view in, std::string& out)
{
  struct State
  {
    z_stream stream{};
    bool ready = false;
    ~State()
    {
      if (ready) {
        deflateEnd(&stream);
      }
    }
  };
  thread_local State state;
  if (in.size() > std::numeric_limits<uInt>::max() / 2) {
    return false; // one deflate call takes it all below this
  }
  if (!state.ready) {
    if (deflateInit(&state.stream, Z_DEFAULT_COMPRESSION) != Z_OK) {
      return false;
    }
    state.ready = true;
  } else if (deflateReset(&state.stream) != Z_OK) {
    return false;
  }
  out.resize(deflateBound(&state.stream, static_cast<uLong>(in.size())));
  state.stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  state.stream.avail_in = static_cast<uInt>(in.size());
  state.stream.next_out = reinterpret_cast<Bytef*>(out.data());
  state.stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&state.stream, Z_FINISH) != Z_STREAM_END) {
    return false;
  }
  out.resize(state.stream.total_out);
  return true;
}

} // namespace

void
normalize(Manifest& manifest)
{
  auto order = [](const ManifestEntry& a, const ManifestEntry& b) {
    return a.path != b.path ? a.path < b.path : a.role < b.role;
  };
  std::sort(manifest.entries.begin(), manifest.entries.end(), order);
  manifest.entries.erase(
    std::unique(manifest.entries.begin(),
                manifest.entries.end(),
                [](const ManifestEntry& a, const ManifestEntry& b) { return a.path == b.path && a.role == b.role; }),
    manifest.entries.end());
}

std::string
encode(const Manifest& manifest)
{
  // The columns that compress (roles, sizes, front-coded paths), packed.
  std::string packed;
  packed.reserve(manifest.entries.size() * 16);
  for (const ManifestEntry& entry : manifest.entries) {
    packed += static_cast<char>(entry.role);
  }
  for (const ManifestEntry& entry : manifest.entries) {
    put_number(packed, entry.size);
  }
  std::string_view previous;
  for (const ManifestEntry& entry : manifest.entries) {
    const std::string_view path = entry.path;
    size_t shared = 0;
    while (shared < previous.size() && shared < path.size() && previous[shared] == path[shared]) {
      ++shared;
    }
    put_number(packed, shared);
    put_number(packed, path.size() - shared);
    packed.append(path.substr(shared));
    previous = path;
  }
  std::string compressed;
  if (!deflate_default(packed, compressed)) {
    // Only a zlib without memory fails here; the uncompressed columns are
    // then what is stored (level 0 is still a zlib stream).
    uLongf compressed_size = compressBound(static_cast<uLong>(packed.size()));
    compressed.assign(compressed_size, '\0');
    if (compress2(reinterpret_cast<Bytef*>(compressed.data()),
                  &compressed_size,
                  reinterpret_cast<const Bytef*>(packed.data()),
                  static_cast<uLong>(packed.size()),
                  Z_NO_COMPRESSION)
        != Z_OK) {
      throw std::bad_alloc();
    }
    compressed.resize(compressed_size);
  }

  // Reserved once: the header line (the algorithm's name and two numbers,
  // under 64 bytes), the columns and a raw digest an entry.
  std::string out;
  out.reserve(k_magic.size() + 64 + compressed.size()
              + manifest.entries.size() * digest::digest_size(manifest.algorithm));
  out += k_magic;
  out += digest::algorithm_name(manifest.algorithm);
  out += ' ';
  out += std::to_string(manifest.entries.size());
  out += ' ';
  out += std::to_string(packed.size());
  out += '\n';
  out += compressed;
  for (const ManifestEntry& entry : manifest.entries) {
    util::append_from_hex(entry.hex, out);
  }
  return out;
}

namespace {

// The header's numbers after the algorithm: "<count>" in version 1,
// "<count> <packed bytes>" in version 2.
bool
parse_count(std::string_view text, uint64_t& value, uint64_t limit)
{
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && value <= limit;
}

// Checks one decoded entry's path against the entry before it (`previous`
// and its role; `first` when there is none) and the path rules.
std::optional<std::string>
entry_problem(bool first, std::string_view previous, Role previous_role, std::string_view path, Role role)
{
  if (!path.starts_with('/') || path.find('\0') != std::string_view::npos) {
    return "'s path is not absolute";
  }
  if (!first && (previous > path || (previous == path && previous_role >= role))) {
    return " is out of order";
  }
  return std::nullopt;
}

// Reads one front-coded path after the last of `out`'s paths from `in`.
bool
get_path(std::string_view& in, ManifestColumns& out)
{
  uint64_t shared = 0;
  uint64_t rest = 0;
  const size_t read = out.path_ends.size();
  const std::string_view previous = read == 0 ? std::string_view() : out.path(read - 1);
  if (!get_number(in, shared) || !get_number(in, rest) || shared > previous.size() || rest > in.size()) {
    return false;
  }
  const size_t start = out.paths.size();
  out.paths.append(out.paths, start - previous.size(), shared);
  out.paths.append(in.substr(0, rest));
  out.path_ends.push_back(out.paths.size());
  in.remove_prefix(rest);
  return true;
}

} // namespace

std::string_view
ManifestColumns::path(size_t i) const
{
  const size_t start = i == 0 ? 0 : path_ends[i - 1];
  return std::string_view(paths).substr(start, path_ends[i] - start);
}

std::string_view
ManifestColumns::raw_digest(size_t i) const
{
  const size_t bytes = digest::digest_size(algorithm);
  return std::string_view(digests).substr(i * bytes, bytes);
}

Expected<void>
decode_manifest_columns(std::string_view bytes, const std::string& where, ManifestColumns& out)
{
  out.roles.clear();
  out.sizes.clear();
  out.paths.clear();
  out.path_ends.clear();
  out.digests.clear();
  auto bad = [&](const std::string& why) { return make_error(where, "not an input manifest: " + why); };
  const bool version_1 = bytes.starts_with(k_magic_1);
  if (!version_1 && !bytes.starts_with(k_magic)) {
    return bad("it does not begin with \"" + std::string(k_magic) + "\"");
  }
  bytes.remove_prefix(k_magic.size());
  const size_t end_of_line = bytes.find('\n');
  if (end_of_line == std::string_view::npos) {
    return bad("its first line is cut short");
  }
  const std::string_view header = bytes.substr(0, end_of_line);
  bytes.remove_prefix(end_of_line + 1);
  const size_t space = header.find(' ');
  if (space == std::string_view::npos) {
    return bad("its first line is cut short");
  }
  const auto algorithm = digest::parse_algorithm(header.substr(0, space));
  if (!algorithm) {
    return bad("unknown digest algorithm '" + std::string(header.substr(0, space)) + "'");
  }
  out.algorithm = *algorithm;
  std::string_view count_text = header.substr(space + 1);
  std::string_view packed_text;
  if (!version_1) {
    const size_t second = count_text.find(' ');
    if (second == std::string_view::npos) {
      return bad("its first line is cut short");
    }
    packed_text = count_text.substr(second + 1);
    count_text = count_text.substr(0, second);
  }
  uint64_t count = 0;
  if (!parse_count(count_text, count, k_max_entries)) {
    return bad("its entry count '" + std::string(count_text) + "' is not a number");
  }
  const size_t digest_bytes = digest::digest_size(out.algorithm);
  const size_t expected = std::min<uint64_t>(count, bytes.size() / (digest_bytes + 1) + 1);
  out.roles.reserve(expected);
  out.sizes.reserve(expected);
  out.path_ends.reserve(expected);
  out.digests.reserve(expected * digest_bytes);
  auto entry_name = [](uint64_t i) { return "entry " + std::to_string(i + 1); };
  // The entry just read, checked against the one before it.
  auto check_last = [&](uint64_t i) -> std::optional<std::string> {
    const size_t n = out.size() - 1;
    const bool first = n == 0;
    auto problem = entry_problem(first,
                                 first ? std::string_view() : out.path(n - 1),
                                 first ? Role::link : out.roles[n - 1],
                                 out.path(n),
                                 out.roles[n]);
    if (problem) {
      return entry_name(i) + *problem;
    }
    return std::nullopt;
  };

  if (version_1) {
    // Per entry: role code, raw digest, size, front-coded path.
    for (uint64_t i = 0; i < count; ++i) {
      if (bytes.size() < 1 + digest_bytes) {
        return bad(entry_name(i) + " is cut short");
      }
      const auto role = role_of_code(bytes.front());
      if (!role) {
        return bad(entry_name(i) + " has an unknown role");
      }
      out.digests.append(bytes.substr(1, digest_bytes));
      bytes.remove_prefix(1 + digest_bytes);
      uint64_t size = 0;
      if (!get_number(bytes, size)) {
        return bad(entry_name(i) + " has a damaged size");
      }
      if (!get_path(bytes, out)) {
        return bad(entry_name(i) + " has a damaged path");
      }
      out.roles.push_back(*role);
      out.sizes.push_back(size);
      if (auto problem = check_last(i)) {
        return bad(*problem);
      }
    }
    if (!bytes.empty()) {
      return bad(std::to_string(bytes.size()) + " bytes after its last entry");
    }
    return {};
  }

  // Version 2: the packed columns deflated, then the raw digests.
  uint64_t packed_size = 0;
  // Each entry packs at most a role, three 10-byte numbers and a path.
  if (!parse_count(packed_text, packed_size, count * (31 + k_max_path)) || packed_size < count * 4) {
    return bad("its packed size '" + std::string(packed_text) + "' does not fit its " + std::to_string(count)
               + " entries");
  }
  if (bytes.size() < count * digest_bytes) {
    return bad("its digests are cut short");
  }
  const std::string_view compressed = bytes.substr(0, bytes.size() - count * digest_bytes);
  // Deflate packs at most 1032 bytes into one: a larger claim is damage,
  // and is not allocated.
  if (packed_size > compressed.size() * 1032 + 64) {
    return bad("its packed size " + std::to_string(packed_size) + " is more than its "
               + std::to_string(compressed.size()) + " compressed bytes can hold");
  }
  std::string_view digests = bytes.substr(compressed.size());
  out.packed.resize(packed_size);
  uLongf unpacked_size = static_cast<uLongf>(packed_size);
  uLong compressed_size = static_cast<uLong>(compressed.size());
  const int inflated = uncompress2(reinterpret_cast<Bytef*>(out.packed.data()),
                                   &unpacked_size,
                                   reinterpret_cast<const Bytef*>(compressed.data()),
                                   &compressed_size);
  if (inflated != Z_OK || unpacked_size != packed_size || compressed_size != compressed.size()) {
    return bad(inflated == Z_MEM_ERROR
                 ? "out of memory inflating its entries"
                 : "its entries do not inflate to the " + std::to_string(packed_size) + " bytes its first line says");
  }
  const std::string_view roles = std::string_view(out.packed).substr(0, count);
  std::string_view rest = std::string_view(out.packed).substr(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!get_number(rest, size)) {
      return bad(entry_name(i) + " has a damaged size");
    }
    out.sizes.push_back(size);
  }
  out.digests.assign(digests);
  for (uint64_t i = 0; i < count; ++i) {
    const auto role = role_of_code(roles[i]);
    if (!role) {
      return bad(entry_name(i) + " has an unknown role");
    }
    out.roles.push_back(*role);
    if (!get_path(rest, out)) {
      return bad(entry_name(i) + " has a damaged path");
    }
    if (auto problem = check_last(i)) {
      return bad(*problem);
    }
  }
  if (!rest.empty()) {
    return bad(std::to_string(rest.size()) + " packed bytes after its last entry");
  }
  return {};
}

Manifest
manifest_of_columns(const ManifestColumns& columns)
{
  Manifest manifest;
  manifest.algorithm = columns.algorithm;
  manifest.entries.resize(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    ManifestEntry& entry = manifest.entries[i];
    entry.role = columns.roles[i];
    const std::string_view raw = columns.raw_digest(i);
    entry.hex = util::to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
    entry.size = columns.sizes[i];
    entry.path = columns.path(i);
  }
  return manifest;
}

ManifestColumns
columns_of_manifest(const Manifest& manifest)
{
  ManifestColumns columns;
  columns.algorithm = manifest.algorithm;
  for (const ManifestEntry& entry : manifest.entries) {
    columns.roles.push_back(entry.role);
    columns.sizes.push_back(entry.size);
    columns.paths += entry.path;
    columns.path_ends.push_back(columns.paths.size());
    util::append_from_hex(entry.hex, columns.digests);
  }
  return columns;
}

Expected<Manifest>
decode_manifest(std::string_view bytes, const std::string& where)
{
  ManifestColumns columns;
  if (auto decoded = decode_manifest_columns(bytes, where, columns); !decoded) {
    return decoded.error();
  }
  return manifest_of_columns(columns);
}

Expected<DigestKey>
manifest_key(digest::Algorithm algorithm, std::string_view encoded)
{
  digest::Hasher hasher(algorithm);
  auto hex = hasher.digest_bytes(encoded);
  if (!hex) {
    return hex.error();
  }
  return DigestKey{algorithm, std::move(*hex)};
}

std::string
reverse_line(const DigestKey& manifest)
{
  std::string raw;
  util::append_from_hex(manifest.hex, raw);
  std::string line;
  line.reserve(raw.size() + 2);
  for (const char c : raw) {
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\\') {
      line += "\\\\";
    } else {
      line += c;
    }
  }
  return line;
}

std::optional<DigestKey>
parse_reverse_line(std::string_view line, digest::Algorithm algorithm)
{
  const size_t digest_bytes = digest::digest_size(algorithm);
  // Format 2's first lines: "<role code><manifest hex>".
  if (line.size() == 1 + 2 * digest_bytes && role_of_code(line.front())
      && util::is_lower_hex(line.substr(1), 2 * digest_bytes)) {
    return DigestKey{algorithm, std::string(line.substr(1))};
  }
  std::string raw;
  raw.reserve(digest_bytes);
  for (size_t i = 0; i < line.size(); ++i) {
    char byte = line[i];
    if (byte == '\\') {
      if (++i == line.size() || (line[i] != 'n' && line[i] != '\\')) {
        return std::nullopt;
      }
      byte = line[i] == 'n' ? '\n' : '\\';
    }
    raw += byte;
  }
  if (raw.size() != digest_bytes) {
    return std::nullopt;
  }
  return DigestKey{algorithm, util::to_hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size())};
}

} // namespace fingerprint::store
