#pragma once

// A product's input manifest: every file its build step read, each with the
// role it played, stored once under its own digest (as OmniBOR's input
// manifests are), so that a relink that read the same bytes adds nothing
// but its `produced` event, which names the manifest in `inputs`.

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/util/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::store {

// How a build step used a file it read (README, "What a target consumed").
enum class Role : char
{
  link = 'l',      // the linker read it
  compile = 'c',   // a compile read it: a source or a header
  interface = 'i', // a static library hands it to every consumer (its link interface)
  declared = 'd',  // fingerprint_target(... CONSUMES ...)
};

inline constexpr Role k_all_roles[] = {Role::link, Role::compile, Role::interface, Role::declared};

// "link", "compile", "interface", "declared".
std::string_view role_name(Role role);
std::optional<Role> parse_role(std::string_view name);
// The role of its one-letter code ('l', 'c', 'i', 'd').
std::optional<Role> role_of_code(char code);

struct ManifestEntry
{
  Role role = Role::link;
  std::string hex; // the input's digest, in the manifest's algorithm
  uint64_t size = 0;
  std::string path; // where the build step read it: absolute, exact bytes

  bool operator==(const ManifestEntry&) const = default;
};

struct Manifest
{
  digest::Algorithm algorithm = digest::k_default_algorithm;
  // Sorted by path, then role; no (path, role) twice.
  std::vector<ManifestEntry> entries;
};

// Sorts the entries and drops repeated (path, role) pairs, as encode() needs.
void normalize(Manifest& manifest);

// The stored form (docs/ARCHITECTURE.md, "Input manifests"): a header line
// "fingerprint-manifest 2 <algorithm> <count> <packed bytes>\n", then the
// packed columns deflated (zlib): every entry's role code, then every
// size (LEB128), then every path front-coded against the one before (bytes
// shared, then the rest: two LEB128 numbers and the bytes); then every
// raw digest, which does not compress. About 42 bytes per input where a
// JSON event took 400. `manifest` must be normalized, and each entry's hex
// the algorithm's digest in lowercase (as a Hasher gives it).
std::string encode(const Manifest& manifest);

// Reads what encode() wrote, or version 1 (per entry: role code, raw
// digest, size, front-coded path; no compression); the error says what is
// wrong, `where` names the file.
Expected<Manifest> decode_manifest(std::string_view bytes, const std::string& where);

// A manifest as columns, decoded without making a ManifestEntry (two
// strings) of each entry: what a query over a whole store reads, a million
// entries at a time. One is reused from manifest to manifest.
struct ManifestColumns
{
  digest::Algorithm algorithm = digest::k_default_algorithm;
  std::vector<Role> roles;
  std::vector<uint64_t> sizes;
  std::string paths;             // every entry's path, one after another
  std::vector<size_t> path_ends; // where each ends in `paths`
  std::string digests;           // every raw digest, one after another
  std::string packed;            // the inflated columns (a buffer)

  size_t
  size() const
  {
    return roles.size();
  }
  std::string_view path(size_t i) const;
  std::string_view raw_digest(size_t i) const; // digest::digest_size(algorithm) bytes
};

// decode_manifest(), into `out` (its buffers reused); on an error `out`
// holds part of the entries.
Expected<void> decode_manifest_columns(std::string_view bytes, const std::string& where, ManifestColumns& out);

// The entries of `columns`, each a ManifestEntry, and back.
Manifest manifest_of_columns(const ManifestColumns& columns);
ManifestColumns columns_of_manifest(const Manifest& manifest);

// What a reader says of a manifest that a product names and the store does
// not have: put_manifest() stores it before any event names it, so it was
// lost, or set aside by fsck.
inline constexpr std::string_view k_manifest_missing = "named as the inputs of a product, but not in the store";

// The manifest's name: its algorithm's digest of its encoded bytes.
Expected<DigestKey> manifest_key(digest::Algorithm algorithm, std::string_view encoded);

// What the reverse index holds per input: one of the manifests that list
// it (in one role or more: the manifest says which).
struct ManifestUse
{
  DigestKey manifest;

  bool operator==(const ManifestUse&) const = default;
};

// A reverse index line, without its newline: the manifest's raw digest,
// each newline byte in it written as a backslash and an 'n', each
// backslash as two (32 to 64 bytes for SHA-256, 32.25 on average).
std::string reverse_line(const DigestKey& manifest);
// Reads one of those, or one of format 2's first lines, "<role
// code><manifest hex>"; `algorithm` is the input's, which its manifests
// share.
std::optional<DigestKey> parse_reverse_line(std::string_view line, digest::Algorithm algorithm);

} // namespace fingerprint::store
