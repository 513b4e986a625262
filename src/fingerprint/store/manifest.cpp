#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <charconv>

namespace fingerprint::store {

namespace {

constexpr std::string_view k_magic = "fingerprint-manifest 1 ";
// Paths are at most PATH_MAX; a count this large is not a manifest.
constexpr uint64_t k_max_entries = 16 * 1024 * 1024;

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

int
nibble(char c)
{
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
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
  std::string out(k_magic);
  out += digest::algorithm_name(manifest.algorithm);
  out += ' ';
  out += std::to_string(manifest.entries.size());
  out += '\n';
  std::string_view previous;
  for (const ManifestEntry& entry : manifest.entries) {
    out += static_cast<char>(entry.role);
    for (size_t i = 0; i + 1 < entry.hex.size(); i += 2) {
      out += static_cast<char>(nibble(entry.hex[i]) << 4 | nibble(entry.hex[i + 1]));
    }
    put_number(out, entry.size);
    const std::string_view path = entry.path;
    size_t shared = 0;
    while (shared < previous.size() && shared < path.size() && previous[shared] == path[shared]) {
      ++shared;
    }
    put_number(out, shared);
    put_number(out, path.size() - shared);
    out.append(path.substr(shared));
    previous = path;
  }
  return out;
}

Expected<Manifest>
decode_manifest(std::string_view bytes, const std::string& where)
{
  auto bad = [&](const std::string& why) { return make_error(where, "not an input manifest: " + why); };
  if (!bytes.starts_with(k_magic)) {
    return bad("it does not begin with \"" + std::string(k_magic) + "\"");
  }
  bytes.remove_prefix(k_magic.size());
  const size_t end_of_line = bytes.find('\n');
  const size_t space = bytes.substr(0, end_of_line).find(' ');
  if (end_of_line == std::string_view::npos || space == std::string_view::npos) {
    return bad("its first line is cut short");
  }
  Manifest manifest;
  const auto algorithm = digest::parse_algorithm(bytes.substr(0, space));
  if (!algorithm) {
    return bad("unknown digest algorithm '" + std::string(bytes.substr(0, space)) + "'");
  }
  manifest.algorithm = *algorithm;
  const std::string_view count_text = bytes.substr(space + 1, end_of_line - space - 1);
  uint64_t count = 0;
  if (auto [end, error] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
      error != std::errc() || end != count_text.data() + count_text.size() || count > k_max_entries) {
    return bad("its entry count '" + std::string(count_text) + "' is not a number");
  }
  bytes.remove_prefix(end_of_line + 1);
  const size_t digest_bytes = digest::digest_size(manifest.algorithm);
  manifest.entries.reserve(std::min<uint64_t>(count, bytes.size() / (digest_bytes + 3) + 1));
  std::string previous;
  static constexpr char k_hex[] = "0123456789abcdef";
  for (uint64_t i = 0; i < count; ++i) {
    const std::string entry_name = "entry " + std::to_string(i + 1);
    if (bytes.size() < 1 + digest_bytes) {
      return bad(entry_name + " is cut short");
    }
    ManifestEntry entry;
    const auto role = role_of_code(bytes.front());
    if (!role) {
      return bad(entry_name + " has an unknown role");
    }
    entry.role = *role;
    entry.hex.reserve(2 * digest_bytes);
    for (size_t b = 1; b <= digest_bytes; ++b) {
      const auto byte = static_cast<unsigned char>(bytes[b]);
      entry.hex += k_hex[byte >> 4];
      entry.hex += k_hex[byte & 15];
    }
    bytes.remove_prefix(1 + digest_bytes);
    uint64_t shared = 0;
    uint64_t rest = 0;
    if (!get_number(bytes, entry.size)) {
      return bad(entry_name + " has a damaged size");
    }
    if (!get_number(bytes, shared) || !get_number(bytes, rest) || shared > previous.size() || rest > bytes.size()) {
      return bad(entry_name + " has a damaged path");
    }
    entry.path = previous.substr(0, shared);
    entry.path.append(bytes.substr(0, rest));
    bytes.remove_prefix(rest);
    if (!entry.path.starts_with('/') || entry.path.find('\0') != std::string::npos) {
      return bad(entry_name + "'s path is not absolute");
    }
    if (!manifest.entries.empty()) {
      const ManifestEntry& last = manifest.entries.back();
      if (last.path > entry.path || (last.path == entry.path && last.role >= entry.role)) {
        return bad(entry_name + " is out of order");
      }
    }
    previous = entry.path;
    manifest.entries.push_back(std::move(entry));
  }
  if (!bytes.empty()) {
    return bad(std::to_string(bytes.size()) + " bytes after its last entry");
  }
  return manifest;
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
reverse_line(const ManifestUse& use)
{
  std::string line(1, static_cast<char>(use.role));
  line += use.manifest.hex;
  return line;
}

std::optional<ManifestUse>
parse_reverse_line(std::string_view line, digest::Algorithm algorithm)
{
  if (line.empty()) {
    return std::nullopt;
  }
  const auto role = role_of_code(line.front());
  const std::string_view hex = line.substr(1);
  if (!role || !util::is_lower_hex(hex, 2 * digest::digest_size(algorithm))) {
    return std::nullopt;
  }
  return ManifestUse{DigestKey{algorithm, std::string(hex)}, *role};
}

} // namespace fingerprint::store
