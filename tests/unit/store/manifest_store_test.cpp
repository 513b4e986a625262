// Input manifests in the directory store: their bytes (encode/decode, and
// what damaged bytes are refused for), the format 2 the store is written
// in (and the upgrade of a format-1 store), the walk that lists them, fsck
// of manifests and reverse indexes, and gc of manifests left without users.

#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/format.hpp>
#include <fingerprint/store/gc.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/util/fd.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <sstream>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <zlib.h>

namespace fingerprint::store {
namespace {

using test::TempDir;

std::string
hex_of(char c)
{
  return std::string(64, c);
}

Manifest
sample_manifest()
{
  Manifest manifest;
  manifest.entries = {
    {Role::compile, hex_of('c'), 120, "/src/app/main.cpp"},
    {Role::link, hex_of('a'), 5000, "/build/lib/liba.a"},
    {Role::compile, hex_of('d'), 300, "/src/app/main.hpp"},
    {Role::interface, hex_of('b'), 7000, "/build/lib/libb.a"},
    {Role::declared, hex_of('e'), 1, "/data/table.bin"},
    {Role::link, hex_of('a'), 5000, "/build/lib/liba.a"}, // twice: normalize drops it
  };
  normalize(manifest);
  return manifest;
}

// The bytes a raw digest of hex `hex` is.
std::string
raw_of(std::string_view hex)
{
  std::string raw;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    raw += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return raw;
}

std::string
leb(uint64_t value)
{
  std::string out;
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
  return out;
}

std::string
deflated(std::string_view packed)
{
  uLongf size = compressBound(static_cast<uLong>(packed.size()));
  std::string out(size, '\0');
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(out.data()),
                      &size,
                      reinterpret_cast<const Bytef*>(packed.data()),
                      static_cast<uLong>(packed.size()),
                      Z_DEFAULT_COMPRESSION),
            Z_OK);
  out.resize(size);
  return out;
}

// A version-2 manifest laid out by hand: the header (its count and packed
// size as given), `packed` deflated, then `digests`.
std::string
version_2(std::string_view count, std::string_view packed_size, std::string_view packed, std::string_view digests)
{
  return "fingerprint-manifest 2 sha256 " + std::string(count) + " " + std::string(packed_size) + "\n"
         + deflated(packed) + std::string(digests);
}

// The packed columns of entries given as (role, size, path), not front-coded
// (each path whole: 0 bytes shared).
std::string
packed_of(const std::vector<std::tuple<char, uint64_t, std::string>>& entries)
{
  std::string roles, sizes, paths;
  for (const auto& [role, size, path] : entries) {
    roles += role;
    sizes += leb(size);
    paths += leb(0) + leb(path.size()) + path;
  }
  return roles + sizes + paths;
}

// Version 1, as stores written before manifests were compressed hold them:
// per entry its role code, raw digest, size and front-coded path.
std::string
version_1(const Manifest& manifest)
{
  std::string out = "fingerprint-manifest 1 sha256 " + std::to_string(manifest.entries.size()) + "\n";
  std::string_view previous;
  for (const ManifestEntry& entry : manifest.entries) {
    out += static_cast<char>(entry.role);
    out += raw_of(entry.hex);
    out += leb(entry.size);
    size_t shared = 0;
    while (shared < previous.size() && shared < entry.path.size() && previous[shared] == entry.path[shared]) {
      ++shared;
    }
    out += leb(shared) + leb(entry.path.size() - shared) + entry.path.substr(shared);
    previous = entry.path;
  }
  return out;
}

TEST(ManifestBytes, RoundTripThroughEncodeAndDecode)
{
  const Manifest manifest = sample_manifest();
  ASSERT_EQ(manifest.entries.size(), 5U);
  const std::string bytes = encode(manifest);
  EXPECT_TRUE(bytes.starts_with("fingerprint-manifest 2 sha256 5 ")) << bytes.substr(0, 40);
  // The raw digests come last, uncompressed, in entry order.
  std::string digests;
  for (const ManifestEntry& entry : manifest.entries) {
    digests += raw_of(entry.hex);
  }
  EXPECT_TRUE(bytes.ends_with(digests));
  auto decoded = decode_manifest(bytes, "m");
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->algorithm, manifest.algorithm);
  EXPECT_EQ(decoded->entries, manifest.entries);
  EXPECT_EQ(encode(*decoded), bytes);
}

// The columns a whole-store query decodes into, one buffer for every
// manifest: the same entries as decode_manifest() makes, whatever the
// manifest before them left in the buffer.
TEST(ManifestBytes, ColumnsHoldTheEntriesAndOneBufferServesManyManifests)
{
  Manifest large;
  for (int i = 0; i < 40; ++i) {
    std::string hex = hex_of(static_cast<char>('a' + i % 6));
    hex.replace(0, 8, std::to_string(20000000 + i));
    large.entries.push_back({i % 2 ? Role::compile : Role::link,
                             hex,
                             static_cast<uint64_t>(100 + i),
                             "/usr/include/deep/tree/of/headers/h" + std::to_string(i) + ".h"});
  }
  normalize(large);
  const Manifest small = sample_manifest();
  ManifestColumns columns;
  for (const Manifest* manifest : std::initializer_list<const Manifest*>{&large, &small, &large}) {
    for (const std::string& bytes : {encode(*manifest), version_1(*manifest)}) {
      auto decoded = decode_manifest_columns(bytes, "m", columns);
      ASSERT_TRUE(decoded) << decoded.error().message;
      ASSERT_EQ(columns.size(), manifest->entries.size());
      for (size_t i = 0; i < columns.size(); ++i) {
        const ManifestEntry& entry = manifest->entries[i];
        EXPECT_EQ(columns.roles[i], entry.role) << i;
        EXPECT_EQ(columns.sizes[i], entry.size) << i;
        EXPECT_EQ(columns.path(i), entry.path) << i;
        EXPECT_EQ(columns.raw_digest(i), raw_of(entry.hex)) << i;
      }
      EXPECT_EQ(manifest_of_columns(columns).entries, manifest->entries);
      EXPECT_EQ(encode(manifest_of_columns(columns_of_manifest(*manifest))), encode(*manifest));
    }
  }
  // A damaged one is refused as decode_manifest() refuses it.
  std::string cut = encode(small);
  cut.resize(cut.size() - 40);
  auto refused = decode_manifest_columns(cut, "the/file", columns);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("the/file: not an input manifest"), std::string::npos)
    << refused.error().message;
}

TEST(ManifestBytes, PathsAndSizesAreDeflated)
{
  // 200 headers of one tree: what a compile of a large project reads.
  Manifest manifest;
  for (int i = 0; i < 200; ++i) {
    std::string hex = hex_of('0');
    hex.replace(0, 8, std::to_string(10000000 + i));
    manifest.entries.push_back(
      {Role::compile, hex, 4000U + i, "/usr/include/c++/12/bits/header_" + std::to_string(i) + ".h"});
  }
  normalize(manifest);
  const std::string bytes = encode(manifest);
  // Version 1 front-codes the paths and keeps every byte; deflating the
  // columns but the digests saves more than 5 bytes an entry even here,
  // where front coding leaves little.
  EXPECT_LT(bytes.size() + 200 * 5, version_1(manifest).size());
  auto decoded = decode_manifest(bytes, "m");
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->entries, manifest.entries);
}

TEST(ManifestBytes, TheDeflatedColumnsAreCompress2sBytesWhateverWasEncodedBefore)
{
  // The deflate state is kept and reset between manifests: the name of a
  // manifest (the digest of its bytes) must not depend on what the thread
  // encoded before, or an unchanged relink would store a new manifest.
  std::vector<Manifest> manifests;
  for (int n : {200, 3, 1, 57, 200}) {
    Manifest manifest;
    for (int i = 0; i < n; ++i) {
      manifest.entries.push_back({i % 2 == 0 ? Role::compile : Role::link,
                                  hex_of(static_cast<char>('a' + i % 6)),
                                  static_cast<uint64_t>(1000 + 7 * i * n),
                                  "/usr/include/c++/12/bits/h" + std::to_string(i * n) + ".h"});
    }
    normalize(manifest);
    manifests.push_back(std::move(manifest));
  }
  std::vector<std::string> first_bytes;
  for (const Manifest& manifest : manifests) {
    const std::string bytes = encode(manifest);
    first_bytes.push_back(bytes);
    // fingerprint-manifest 2 <algorithm> <count> <packed bytes>\n, the
    // deflated columns, the raw digests (32 bytes each).
    const size_t newline = bytes.find('\n');
    ASSERT_NE(newline, std::string::npos);
    std::istringstream header(bytes.substr(0, newline));
    std::string magic, version, algorithm;
    size_t count = 0;
    uLong packed_size = 0;
    header >> magic >> version >> algorithm >> count >> packed_size;
    ASSERT_EQ(count, manifest.entries.size());
    const std::string deflated = bytes.substr(newline + 1, bytes.size() - newline - 1 - count * 32);
    std::string packed(packed_size, '\0');
    uLongf unpacked = packed_size;
    ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(packed.data()),
                         &unpacked,
                         reinterpret_cast<const Bytef*>(deflated.data()),
                         static_cast<uLong>(deflated.size())),
              Z_OK);
    uLongf size = compressBound(packed_size);
    std::string expected(size, '\0');
    ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(expected.data()),
                        &size,
                        reinterpret_cast<const Bytef*>(packed.data()),
                        packed_size,
                        Z_DEFAULT_COMPRESSION),
              Z_OK);
    expected.resize(size);
    EXPECT_EQ(deflated, expected) << manifest.entries.size() << " entries";
  }
  // And the same bytes again, in another order.
  for (size_t i = manifests.size(); i-- > 0;) {
    EXPECT_EQ(encode(manifests[i]), first_bytes[i]) << i;
  }
}

TEST(ManifestBytes, AVersion1ManifestStillReads)
{
  const Manifest manifest = sample_manifest();
  const std::string old = version_1(manifest);
  auto decoded = decode_manifest(old, "m");
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->entries, manifest.entries);
  const std::string header = "fingerprint-manifest 1 sha256 5\n";
  std::string unknown_role = old;
  unknown_role[header.size()] = 'x';
  const std::pair<std::string, std::string> damaged[] = {
    {old.substr(0, old.size() - 10), "cut short"},
    {old + "x", "after its last entry"},
    {"fingerprint-manifest 1 sha256 6\n" + old.substr(header.size()), "cut short"},
    {unknown_role, "unknown role"},
    {header + "c" + std::string(32, '\x11') + std::string(12, '\xff'), "damaged size"},
  };
  for (const auto& [bytes, reason] : damaged) {
    auto refused = decode_manifest(bytes, "m");
    ASSERT_FALSE(refused) << reason;
    EXPECT_NE(refused.error().message.find(reason), std::string::npos) << refused.error().message;
  }
}

TEST(ManifestBytes, DamagedBytesAreRefusedWithTheReason)
{
  const std::string bytes = encode(sample_manifest());
  const size_t header = bytes.find('\n') + 1;
  const std::string one_digest = raw_of(hex_of('a'));
  const std::string one = packed_of({{'l', 1, "/a"}});
  const std::string one_size = std::to_string(one.size());
  struct Case
  {
    std::string name;
    std::string bytes;
    std::string reason;
  };
  // Its packed size as it is.
  auto whole = [](std::string_view count, const std::string& packed, std::string_view digests) {
    return version_2(count, std::to_string(packed.size()), packed, digests);
  };
  std::string flipped = bytes;
  flipped[header + 4] = static_cast<char>(flipped[header + 4] ^ 0x55); // inside the deflated columns
  const Case cases[] = {
    {"empty", "", "does not begin with"},
    {"another magic", "fingerprint-manifest 9 sha256 5\n" + bytes.substr(header), "does not begin with"},
    {"no end of header", "fingerprint-manifest 2 sha256 5 40", "cut short"},
    {"no packed size", "fingerprint-manifest 2 sha256 1\n" + deflated(one) + one_digest, "cut short"},
    {"unknown algorithm",
     "fingerprint-manifest 2 sha7 1 " + one_size + "\n" + deflated(one) + one_digest,
     "unknown digest algorithm"},
    {"count not a number", version_2("one", one_size, one, one_digest), "not a number"},
    {"packed size not a number", version_2("1", "six", one, one_digest), "does not fit"},
    {"packed size too small for its entries", version_2("2", "7", one, one_digest + one_digest), "does not fit"},
    {"digests cut short", version_2("1", one_size, one, one_digest).substr(0, 40), "digests are cut short"},
    {"columns damaged", flipped, "do not inflate"},
    {"packed size larger than inflated",
     version_2("1", std::to_string(one.size() + 1), one, one_digest),
     "do not inflate"},
    {"packed size beyond what deflate holds",
     version_2("100", "400000", one, std::string(100 * 32, 'd')),
     "more than its"},
    {"unknown role", version_2("1", one_size, packed_of({{'x', 1, "/a"}}), one_digest), "unknown role"},
    {"damaged size",
     whole("1", std::string("l") + std::string(10, '\xff') + leb(0) + leb(1) + "/", one_digest),
     "damaged size"},
    {"damaged path", whole("1", std::string("l") + leb(1) + leb(3) + leb(9) + "/", one_digest), "damaged path"},
    {"relative path", version_2("1", one_size, packed_of({{'l', 1, "xa"}}), one_digest), "not absolute"},
    {"more packed than counted",
     version_2("1", std::to_string(one.size() + 1), one + "x", one_digest),
     "packed bytes after its last entry"},
    {"out of order", whole("2", packed_of({{'l', 1, "/b"}, {'l', 1, "/a"}}), one_digest + one_digest), "out of order"},
  };
  for (const Case& c : cases) {
    auto decoded = decode_manifest(c.bytes, "the/file");
    ASSERT_FALSE(decoded) << c.name;
    EXPECT_NE(decoded.error().message.find("the/file"), std::string::npos) << c.name << ": " << decoded.error().message;
    EXPECT_NE(decoded.error().message.find(c.reason), std::string::npos) << c.name << ": " << decoded.error().message;
  }
}

TEST(ManifestBytes, AReverseLineIsTheManifestsRawDigestEscaped)
{
  const DigestKey plain{digest::Algorithm::sha256, hex_of('9')};
  EXPECT_EQ(reverse_line(plain), raw_of(hex_of('9')));
  EXPECT_EQ(parse_reverse_line(reverse_line(plain), digest::Algorithm::sha256), plain);
  // A newline byte and a backslash in the digest: escaped, so the line
  // holds no newline, and read back.
  std::string hex = hex_of('1');
  hex.replace(0, 2, "0a");
  hex.replace(10, 2, "5c");
  const DigestKey escaped{digest::Algorithm::sha256, hex};
  const std::string line = reverse_line(escaped);
  EXPECT_EQ(line.size(), 34U);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.substr(0, 2), "\\n");
  EXPECT_EQ(parse_reverse_line(line, digest::Algorithm::sha256), escaped);
  // The lines of format 2's first stores, "<role code><manifest hex>".
  EXPECT_EQ(parse_reverse_line("c" + hex_of('9'), digest::Algorithm::sha256), plain);
  EXPECT_EQ(parse_reverse_line("i" + hex_of('9'), digest::Algorithm::sha256), plain);
  // Not a digest: too short, too long, a bad escape, empty.
  EXPECT_FALSE(parse_reverse_line(raw_of(hex_of('9')).substr(1), digest::Algorithm::sha256));
  EXPECT_FALSE(parse_reverse_line(raw_of(hex_of('9')) + "x", digest::Algorithm::sha256));
  EXPECT_FALSE(parse_reverse_line("\\x" + raw_of(hex_of('9')).substr(2), digest::Algorithm::sha256));
  EXPECT_FALSE(parse_reverse_line(raw_of(hex_of('9')).substr(1) + "\\", digest::Algorithm::sha256));
  EXPECT_FALSE(parse_reverse_line("c" + std::string(64, 'G'), digest::Algorithm::sha256));
  EXPECT_FALSE(parse_reverse_line("", digest::Algorithm::sha256));
}

// A store with one record call: `product` made from sample_manifest(), as
// the recorder writes it (manifest, then the produced event naming it).
struct Recorded
{
  DigestKey manifest;
  DigestKey product;
};

Recorded
record_one(const DirectoryStore& store, char product, const std::string& build, const Manifest& manifest)
{
  const std::string bytes = encode(manifest);
  auto key = manifest_key(manifest.algorithm, bytes);
  EXPECT_TRUE(key);
  auto put = store.put_manifest(*key, bytes, manifest);
  EXPECT_TRUE(put) << put.error().message;
  Event event;
  event.event = EventKind::produced;
  event.digest = DigestKey{digest::Algorithm::sha256, hex_of(product)}.str();
  event.size = 10;
  event.path = "/build/app/" + std::string(1, product);
  event.project = "app";
  event.target = "app_" + std::string(1, product);
  event.build = build;
  event.build_dir = "/build/app";
  event.host = "host";
  event.time = "2026-11-30T09:00:00.000Z";
  event.inputs = key->str();
  auto appended = store.append({event});
  EXPECT_TRUE(appended) << appended.error().message;
  return {*key, DigestKey{digest::Algorithm::sha256, hex_of(product)}};
}

DirectoryStore
writable(const TempDir& dir)
{
  auto store = DirectoryStore::open_for_writing(dir / "store");
  EXPECT_TRUE(store) << store.error().message;
  return std::move(*store);
}

FsckReport
checked(const DirectoryStore& store, bool repair = false)
{
  FsckOptions options;
  options.repair = repair;
  auto report = store.fsck(options);
  EXPECT_TRUE(report) << report.error().message;
  return report ? *report : FsckReport{};
}

std::string
findings_text(const FsckReport& report)
{
  std::string text;
  for (const auto& finding : report.findings) {
    text += finding.file + ": " + finding.problem + " [" + std::string(fsck_kind_name(finding.kind)) + "] -> "
            + finding.repair + "\n";
  }
  return text;
}

TEST(ManifestStore, ANewStoreIsFormat4AndNamesTheNewTrees)
{
  TempDir dir;
  writable(dir);
  const auto format = nlohmann::json::parse(test::read_file(dir / "store/fingerprint-store.json"));
  EXPECT_EQ(format["format"], 4);
  EXPECT_NE(format["layout"].get<std::string>().find("manifests/"), std::string::npos);
  EXPECT_NE(format["layout"].get<std::string>().find("inputs/"), std::string::npos);
  EXPECT_NE(format["layout"].get<std::string>().find("inputs/<algorithm>/journal"), std::string::npos);
  EXPECT_NE(format["layout"].get<std::string>().find("builds.recent"), std::string::npos);
  EXPECT_EQ(k_oldest_supported_format, 1);
}

TEST(ManifestStore, AFormat1StoreReadsAsItIsAndItsFirstWriteUpgradesIt)
{
  TempDir dir;
  std::filesystem::create_directories(dir / "store");
  const std::string old_format = "{\n  \"format\": 1,\n  \"created\": \"2026-01-02T03:04:05.000Z\",\n"
                                 "  \"layout\": \"objects/<algorithm>/<2 hex>/<hex>.jsonl; "
                                 "builds/<project>/<build id>.jsonl\"\n}\n";
  test::write_file(dir / "store/fingerprint-store.json", old_format);
  ::chmod((dir / "store/fingerprint-store.json").c_str(), 0664);
  ASSERT_TRUE(DirectoryStore::open_for_reading(dir / "store"));
  EXPECT_EQ(test::read_file(dir / "store/fingerprint-store.json"), old_format) << "reading changes nothing";
  ASSERT_TRUE(DirectoryStore::open_for_updating(dir / "store"));
  EXPECT_EQ(test::read_file(dir / "store/fingerprint-store.json"), old_format) << "nor does opening to update";

  writable(dir);
  const auto format = nlohmann::json::parse(test::read_file(dir / "store/fingerprint-store.json"));
  EXPECT_EQ(format["format"], k_current_format);
  EXPECT_EQ(format["created"], "2026-01-02T03:04:05.000Z") << "the store keeps its creation time";
  EXPECT_TRUE(format.contains("upgraded"));
  EXPECT_NE(format["layout"].get<std::string>().find("manifests/"), std::string::npos);
  struct stat st
  {};
  ASSERT_EQ(::stat((dir / "store/fingerprint-store.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0664U) << "the upgraded file keeps the old one's mode";
  // Nothing left behind, and a second writer finds it current.
  for (const auto& entry : std::filesystem::directory_iterator(dir / "store")) {
    EXPECT_FALSE(layout::is_temp_name(entry.path().filename().string())) << entry.path();
  }
  const std::string upgraded = test::read_file(dir / "store/fingerprint-store.json");
  writable(dir);
  EXPECT_EQ(test::read_file(dir / "store/fingerprint-store.json"), upgraded);
}

TEST(ManifestStore, TheWalkListsManifestsAndReverseIndexesAndTheirLeftovers)
{
  TempDir dir;
  const auto store = writable(dir);
  const Recorded recorded = record_one(store, '8', "1", sample_manifest());
  const std::string manifest = layout::manifest_file(recorded.manifest);
  test::write_file(dir / ("store/" + manifest + ".tmp.123.456"), "half a manifest");
  util::Fd root(::open((dir / "store").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct Counts
  {
    size_t manifests = 0;
    size_t reverse = 0;
    size_t journals = 0;
    size_t leftovers = 0;
    size_t strays = 0;
  };
  auto count = [&] {
    const layout::Walk walk = layout::walk(root.get(), layout::WalkScope::manifests);
    EXPECT_TRUE(walk.errors.empty());
    Counts counts;
    for (const auto& entry : walk.entries) {
      counts.manifests += entry.kind == layout::Entry::Kind::manifest ? 1 : 0;
      counts.reverse += entry.kind == layout::Entry::Kind::reverse_index ? 1 : 0;
      counts.journals += entry.kind == layout::Entry::Kind::input_journal ? 1 : 0;
      counts.leftovers += entry.leftover ? 1 : 0;
      counts.strays += entry.kind == layout::Entry::Kind::stray && !entry.leftover ? 1 : 0;
      EXPECT_FALSE(entry.kind == layout::Entry::Kind::artifact_log) << entry.relative << ": not in objects/";
      if (entry.kind == layout::Entry::Kind::manifest) {
        EXPECT_EQ(entry.key, recorded.manifest);
      }
      if (entry.kind == layout::Entry::Kind::input_journal) {
        EXPECT_EQ(entry.relative, "inputs/sha256/journal");
        EXPECT_EQ(entry.key.algorithm, digest::Algorithm::sha256);
      }
    }
    return counts;
  };
  Counts counts = count();
  EXPECT_EQ(counts.manifests, 1U);
  EXPECT_EQ(counts.reverse, 0U); // in the journal until it is folded
  EXPECT_EQ(counts.journals, 1U);
  EXPECT_EQ(counts.leftovers, 1U);
  EXPECT_EQ(counts.strays, 0U);
  ASSERT_TRUE(store.fold_input_journals());
  counts = count();
  EXPECT_EQ(counts.reverse, 5U); // one per input of sample_manifest()
  EXPECT_EQ(counts.journals, 0U);
  // A file called so elsewhere is no journal.
  test::write_file(dir / "store/inputs/sha256/aa/journal", "");
  test::write_file(dir / "store/manifests/sha256/journal", "");
  counts = count();
  EXPECT_EQ(counts.journals, 0U);
  EXPECT_EQ(counts.strays, 2U);
}

TEST(ManifestStore, FsckFindsNothingWrongInAHealthyStoreAndCountsManifests)
{
  TempDir dir;
  const auto store = writable(dir);
  record_one(store, '8', "1", sample_manifest());
  record_one(store, '9', "1", sample_manifest()); // the same inputs: one manifest, two users
  FsckReport report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
  EXPECT_EQ(report.manifests, 1U);
  EXPECT_EQ(report.reverse_indexes, 0U);
  EXPECT_EQ(report.journaled_manifests, 1U); // the second call found the manifest stored: no second line
  ASSERT_TRUE(store.fold_input_journals());
  report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
  EXPECT_EQ(report.reverse_indexes, 5U);
  EXPECT_EQ(report.journaled_manifests, 0U);
  EXPECT_EQ(report.logs, 3U);   // both products' and the manifest's
  EXPECT_EQ(report.events, 6U); // each produced event three times
}

TEST(ManifestStore, FsckQuarantinesADamagedManifestAndNeverDeletesIt)
{
  TempDir dir;
  const auto store = writable(dir);
  const Recorded recorded = record_one(store, '8', "1", sample_manifest());
  const std::string manifest = dir / ("store/" + layout::manifest_file(recorded.manifest));
  std::string bytes = test::read_file(manifest);
  bytes[bytes.size() - 3] ^= 1;
  test::write_file(manifest, bytes);
  FsckReport report = checked(store);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().file, layout::manifest_file(recorded.manifest)) << findings_text(report);
  EXPECT_EQ(report.findings.front().kind, FsckKind::damage);

  report = checked(store, true);
  EXPECT_FALSE(std::filesystem::exists(manifest));
  EXPECT_EQ(test::read_file(dir / ("store/" + report.quarantine + "/" + layout::manifest_file(recorded.manifest))),
            bytes);
  // Its events stay, and say what is lost.
  report = checked(store);
  ASSERT_EQ(report.findings.size(), 1U) << findings_text(report);
  EXPECT_NE(report.findings.front().problem.find("is not in the store"), std::string::npos);
}

TEST(ManifestStore, FsckMendsTheReverseIndexAndTheManifestLogCopy)
{
  TempDir dir;
  const auto store = writable(dir);
  const Recorded recorded = record_one(store, '8', "1", sample_manifest());
  ASSERT_TRUE(store.fold_input_journals());
  // A line of a call that died before its manifest; a lost line; a lost copy.
  const std::string liba = dir / ("store/" + layout::reverse_index({digest::Algorithm::sha256, hex_of('a')}));
  const std::string liba_before = test::read_file(liba);
  test::write_file(liba, liba_before + "l" + hex_of('7') + "\n");
  const std::string header = dir / ("store/" + layout::reverse_index({digest::Algorithm::sha256, hex_of('d')}));
  std::filesystem::remove(header);
  const std::string manifest_log = dir / ("store/" + recorded.manifest.log_path());
  const std::string copy = test::read_file(manifest_log);
  std::filesystem::remove(manifest_log);

  FsckReport report = checked(store);
  const std::string text = findings_text(report);
  ASSERT_EQ(report.findings.size(), 3U) << text;
  EXPECT_NE(text.find("[leftover]"), std::string::npos) << text;
  EXPECT_NE(text.find("a lost line) [one-sided]"), std::string::npos) << text;
  EXPECT_NE(text.find("is missing from " + recorded.manifest.log_path()), std::string::npos) << text;

  report = checked(store, true);
  EXPECT_EQ(report.repaired, 3U) << findings_text(report);
  EXPECT_EQ(test::read_file(liba), liba_before);
  EXPECT_EQ(test::read_file(header), reverse_line(recorded.manifest) + "\n");
  EXPECT_EQ(test::read_file(manifest_log), copy);
  report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
}

TEST(ManifestStore, GcRemovesAManifestLeftWithoutUsersAndKeepsAShared)
{
  TempDir dir;
  const auto store = writable(dir);
  Manifest own = sample_manifest();
  own.entries.push_back({Role::compile, hex_of('1'), 5, "/src/old.cpp"});
  normalize(own);
  const Recorded old_one = record_one(store, 'f', "1", own);
  const Recorded shared_old = record_one(store, '8', "1", sample_manifest());
  const Recorded shared_new = record_one(store, '8', "2", sample_manifest());
  ASSERT_EQ(shared_old.manifest, shared_new.manifest);
  ASSERT_TRUE(store.fold_input_journals()); // the reverse index files (the journal's case is below)

  GcPlan plan;
  plan.dropped = {{"app", "app_f", "1"}, {"app", "app_8", "1"}};
  const GcResult dry = apply_gc(store, plan, true);
  EXPECT_EQ(dry.manifests.removed, 1U);
  EXPECT_EQ(dry.reverse_indexes.removed, 1U);   // old.cpp's: it lists only that manifest
  EXPECT_EQ(dry.reverse_indexes.rewritten, 5U); // the shared inputs' lose a line
  EXPECT_TRUE(std::filesystem::exists(dir / ("store/" + layout::manifest_file(old_one.manifest))));

  const GcResult result = apply_gc(store, plan, false);
  EXPECT_TRUE(result.failures.empty()) << result.failures.front();
  EXPECT_EQ(result.manifests.removed, 1U);
  EXPECT_FALSE(std::filesystem::exists(dir / ("store/" + layout::manifest_file(old_one.manifest))));
  EXPECT_FALSE(std::filesystem::exists(dir / ("store/" + old_one.manifest.log_path())));
  EXPECT_FALSE(
    std::filesystem::exists(dir / ("store/" + layout::reverse_index({digest::Algorithm::sha256, hex_of('1')}))));
  EXPECT_TRUE(std::filesystem::exists(dir / ("store/" + layout::manifest_file(shared_new.manifest))))
    << "build 2 still uses it";
  std::vector<LogProblem> problems;
  auto uses = store.find_manifest_uses({digest::Algorithm::sha256, hex_of('a')}, problems);
  ASSERT_TRUE(uses);
  ASSERT_EQ(uses->size(), 1U);
  EXPECT_EQ(uses->front().manifest, shared_new.manifest);
  const FsckReport report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
}

} // namespace
} // namespace fingerprint::store

namespace fingerprint::store {
namespace {

// A manifest a crash left short (its bytes are not fsynced) is written
// again by the next call with the same inputs, not taken as there; and
// while it is damaged, the queries of its inputs report it and answer with
// what the other manifests say.
TEST(ManifestStore, AManifestLeftShortIsWrittenAgainAndQueriesGoOnWithoutIt)
{
  const TempDir dir;
  const DirectoryStore store = writable(dir);
  const Recorded first = record_one(store, '1', "b1", sample_manifest());
  Manifest other = sample_manifest();
  other.entries.pop_back();
  const Recorded second = record_one(store, '2', "b1", other);
  const std::string path = dir / ("store/" + layout::manifest_file(first.manifest));
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);

  const DigestKey shared{digest::Algorithm::sha256, hex_of('a')}; // liba.a, in both
  auto record = load_record(store, shared);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->consumers.size(), 1U) << "the undamaged manifest's product still answers";
  ASSERT_FALSE(record->problems.empty());
  EXPECT_NE(record->problems.front().message.find("not an input manifest"), std::string::npos)
    << record->problems.front().message;

  const std::string bytes = encode(sample_manifest());
  auto put = store.put_manifest(first.manifest, bytes, sample_manifest());
  ASSERT_TRUE(put) << put.error().message;
  EXPECT_TRUE(*put) << "a short manifest is not taken as stored";
  EXPECT_EQ(std::filesystem::file_size(path), bytes.size());
  record = load_record(store, shared);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->consumers.size(), 2U);
  EXPECT_TRUE(record->problems.empty());
  (void)second;
}

} // namespace
} // namespace fingerprint::store

namespace fingerprint::store {
namespace {

// A manifest of `count` inputs, each its own, from `seed`.
Manifest
wide_manifest(size_t count, unsigned seed)
{
  Manifest manifest;
  for (size_t i = 0; i < count; ++i) {
    char hex[65];
    std::snprintf(hex, sizeof hex, "%08x%056zx", seed, i);
    manifest.entries.push_back({Role::compile, hex, i, "/src/h" + std::to_string(i) + ".hpp"});
  }
  normalize(manifest);
  return manifest;
}

std::vector<DigestKey>
uses_of(const DirectoryStore& store, const std::string& hex)
{
  std::vector<LogProblem> problems;
  auto uses = store.find_manifest_uses({digest::Algorithm::sha256, hex}, problems);
  EXPECT_TRUE(uses) << uses.error().message;
  EXPECT_TRUE(problems.empty()) << problems.front().file << ": " << problems.front().message;
  std::vector<DigestKey> keys;
  for (const ManifestUse& use : uses ? *uses : std::vector<ManifestUse>()) {
    keys.push_back(use.manifest);
  }
  return keys;
}

// Storing a manifest writes one journal line for all its inputs, not a
// reverse index file per input, and every reader finds it from each input.
TEST(InputJournal, AManifestIsOneJournalLineAndEachOfItsInputsFindsIt)
{
  TempDir dir;
  const auto store = writable(dir);
  const Recorded recorded = record_one(store, '8', "1", sample_manifest());
  const std::string journal = test::read_file(dir / "store/inputs/sha256/journal");
  EXPECT_EQ(journal, journal_line(recorded.manifest, sample_manifest()) + "\n");
  std::string expected = reverse_line(recorded.manifest);
  for (const ManifestEntry& entry : sample_manifest().entries) {
    expected += reverse_line(DigestKey{digest::Algorithm::sha256, entry.hex});
  }
  EXPECT_EQ(journal, expected + "\n") << "each input once, in the manifest's order, raw and escaped";
  EXPECT_EQ(journal.size(), 6U * 32U + 1U);
  const JournalContents read = parse_journal(journal, digest::Algorithm::sha256);
  ASSERT_EQ(read.entries.size(), 1U);
  EXPECT_EQ(read.entries[0].manifest, recorded.manifest.hex);
  EXPECT_EQ(read.entries[0].inputs.size(), 5U);
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "store/inputs")) {
    files += entry.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(files, 1U) << "the journal alone";
  for (const char input : {'a', 'b', 'c', 'd', 'e'}) {
    EXPECT_EQ(uses_of(writable(dir), hex_of(input)), std::vector<DigestKey>{recorded.manifest}) << input;
  }
  EXPECT_TRUE(uses_of(store, hex_of('f')).empty());
  auto found = store.find_by_prefix(digest::Algorithm::sha256, "dd", 10);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, (std::vector<DigestKey>{DigestKey{digest::Algorithm::sha256, hex_of('d')}}));
  auto record = load_record(store, {digest::Algorithm::sha256, hex_of('b')});
  ASSERT_TRUE(record) << record.error().message;
  ASSERT_EQ(record->consumers.size(), 1U);
  EXPECT_EQ(record->consumers.front().product, recorded.product.str());
}

// A fold appends each input's lines once, in the order the manifests were
// stored, then removes the journal; answers are the same before and after,
// and a reader that read the journal before the fold still answers.
TEST(InputJournal, AFoldMovesEachInputsLinesIntoItsFileInOrderAndRemovesTheJournal)
{
  TempDir dir;
  const auto store = writable(dir);
  Manifest second = sample_manifest();
  second.entries.push_back({Role::compile, hex_of('1'), 5, "/src/b.cpp"});
  normalize(second);
  const Recorded one = record_one(store, '8', "1", sample_manifest());
  const Recorded two = record_one(store, '9', "1", second);
  const auto early = writable(dir);
  const std::vector<DigestKey> both{one.manifest, two.manifest};
  ASSERT_EQ(uses_of(early, hex_of('a')), both); // reads the journal now

  auto folded = store.fold_input_journals();
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(*folded, 2U);
  EXPECT_FALSE(std::filesystem::exists(dir / "store/inputs/sha256/journal"));
  EXPECT_EQ(test::read_file(dir / ("store/" + layout::reverse_index({digest::Algorithm::sha256, hex_of('a')}))),
            reverse_line(one.manifest) + "\n" + reverse_line(two.manifest) + "\n");
  EXPECT_EQ(test::read_file(dir / ("store/" + layout::reverse_index({digest::Algorithm::sha256, hex_of('1')}))),
            reverse_line(two.manifest) + "\n");
  EXPECT_EQ(uses_of(early, hex_of('a')), both);
  EXPECT_EQ(uses_of(store, hex_of('a')), both);
  EXPECT_EQ(uses_of(writable(dir), hex_of('1')), std::vector<DigestKey>{two.manifest});
  folded = store.fold_input_journals();
  ASSERT_TRUE(folded);
  EXPECT_EQ(*folded, 0U) << "nothing left to fold";
  const FsckReport report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
  EXPECT_EQ(report.reverse_indexes, 6U);
}

// The writer whose line takes the journal past its bound folds it: each
// input's lines in one append (the 2,000 shared inputs get a file each, with
// a line per manifest).
TEST(InputJournal, TheWriterThatOutgrowsTheJournalFoldsIt)
{
  TempDir dir;
  const auto store = writable(dir);
  const size_t shared = 4000; // a line of about 130 KB
  const Manifest common = wide_manifest(shared, 0);
  auto manifest_of = [&](size_t i) {
    Manifest manifest = common;
    manifest.entries.push_back(wide_manifest(1, static_cast<unsigned>(i + 1)).entries.front());
    manifest.entries.back().path = "/src/own" + std::to_string(i) + ".cpp";
    normalize(manifest);
    return manifest;
  };
  std::vector<DigestKey> keys;
  const std::string journal = dir / "store/inputs/sha256/journal";
  size_t total = 0; // the journal's bytes
  while (total <= k_journal_fold_bytes) {
    const Manifest manifest = manifest_of(keys.size());
    keys.push_back(record_one(store, 'a', std::to_string(keys.size()), manifest).manifest);
    total += journal_line(keys.back(), manifest).size() + 1;
    if (total <= k_journal_fold_bytes) {
      ASSERT_TRUE(std::filesystem::exists(journal)) << "folded before its bound, at " << keys.size();
      ASSERT_EQ(std::filesystem::file_size(journal), total);
    }
  }
  EXPECT_FALSE(std::filesystem::exists(journal)) << "not folded past its bound";
  EXPECT_EQ(uses_of(store, common.entries[1234].hex), keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(uses_of(store, wide_manifest(1, static_cast<unsigned>(i + 1)).entries.front().hex),
              std::vector<DigestKey>{keys[i]});
  }
  const FsckReport report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
  EXPECT_EQ(report.reverse_indexes, shared + keys.size());
}

// Writers append while another folds, over and over: no manifest is lost
// from any of its inputs (an appender that waited for the fold's lock
// finds the journal gone and starts a new one).
TEST(InputJournal, AppendsDuringFoldsLoseNothing)
{
  TempDir dir;
  writable(dir);
  constexpr int k_writers = 3;
  constexpr int k_each = 40;
  std::vector<std::vector<DigestKey>> keys(k_writers);
  std::atomic<bool> done{false};
  std::thread folder([&] {
    const auto store = writable(dir);
    while (!done.load()) {
      auto folded = store.fold_input_journals();
      EXPECT_TRUE(folded) << folded.error().message;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < k_writers; ++w) {
    writers.emplace_back([&, w] {
      const auto store = writable(dir);
      for (int i = 0; i < k_each; ++i) {
        Manifest manifest = wide_manifest(20, static_cast<unsigned>(w * 1000 + i));
        manifest.entries.push_back({Role::link, hex_of('a'), 1, "/lib/shared.a"});
        normalize(manifest);
        const std::string bytes = encode(manifest);
        auto key = manifest_key(manifest.algorithm, bytes);
        ASSERT_TRUE(key);
        auto put = store.put_manifest(*key, bytes, manifest);
        ASSERT_TRUE(put) << put.error().message;
        keys[w].push_back(*key);
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  done = true;
  folder.join();
  const auto store = writable(dir);
  const std::vector<DigestKey> shared = uses_of(store, hex_of('a'));
  EXPECT_EQ(shared.size(), static_cast<size_t>(k_writers * k_each));
  for (int w = 0; w < k_writers; ++w) {
    for (int i = 0; i < k_each; ++i) {
      EXPECT_NE(std::find(shared.begin(), shared.end(), keys[w][i]), shared.end()) << w << " " << i;
      const Manifest manifest = wide_manifest(20, static_cast<unsigned>(w * 1000 + i));
      EXPECT_EQ(uses_of(store, manifest.entries[static_cast<size_t>(i) % 20].hex), std::vector<DigestKey>{keys[w][i]});
    }
  }
}

// fsck reads the journal as the reverse index it stands for: its damage and
// its lines for manifests not in the store are findings; --repair folds it,
// sets aside what cannot be read (a copy in the quarantine) and drops the
// line of a manifest that never came.
TEST(InputJournal, FsckChecksTheJournalAndRepairFoldsIt)
{
  TempDir dir;
  const auto store = writable(dir);
  const Recorded recorded = record_one(store, '8', "1", sample_manifest());
  const std::string journal = dir / "store/inputs/sha256/journal";
  const std::string good = test::read_file(journal);
  const std::string c = reverse_line({digest::Algorithm::sha256, hex_of('c')});
  test::write_file(journal,
                   good + "not a journal line\n" + reverse_line({digest::Algorithm::sha256, hex_of('7')}) + c + "\n"
                     + reverse_line({digest::Algorithm::sha256, hex_of('6')}) + c);
  FsckReport report = checked(store);
  std::string text = findings_text(report);
  EXPECT_EQ(report.journaled_manifests, 2U) << text;
  ASSERT_EQ(report.findings.size(), 3U) << text;
  EXPECT_NE(text.find("inputs/sha256/journal: unreadable line: not a journal line"), std::string::npos) << text;
  EXPECT_NE(text.find("names input manifest sha256:" + hex_of('7') + ", which is not in the store"), std::string::npos)
    << text;
  EXPECT_NE(text.find("torn last line"), std::string::npos) << text;

  report = checked(store, true);
  text = findings_text(report);
  EXPECT_FALSE(std::filesystem::exists(journal)) << text;
  EXPECT_FALSE(report.quarantine.empty()) << text;
  EXPECT_EQ(test::read_file(dir / ("store/" + report.quarantine + "/inputs/sha256/journal")), "not a journal line\n")
    << "what could not be read is kept";
  EXPECT_EQ(uses_of(store, hex_of('c')), std::vector<DigestKey>{recorded.manifest});
  report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
  EXPECT_EQ(report.reverse_indexes, 5U);
}

// gc takes the journal's line of a manifest it removes, as it takes the
// reverse index files' lines.
TEST(InputJournal, GcTakesTheJournalLineOfAManifestItRemoves)
{
  TempDir dir;
  const auto store = writable(dir);
  Manifest own = sample_manifest();
  own.entries.push_back({Role::compile, hex_of('1'), 5, "/src/old.cpp"});
  normalize(own);
  const Recorded old_one = record_one(store, 'f', "1", own);
  const Recorded kept = record_one(store, '8', "1", sample_manifest());
  GcPlan plan;
  plan.dropped = {{"app", "app_f", "1"}};
  const GcResult dry = apply_gc(store, plan, true);
  EXPECT_EQ(dry.reverse_indexes.rewritten, 1U);
  EXPECT_EQ(test::read_file(dir / "store/inputs/sha256/journal"),
            journal_line(old_one.manifest, own) + "\n" + journal_line(kept.manifest, sample_manifest()) + "\n")
    << "a dry run changes nothing";
  const GcResult result = apply_gc(store, plan, false);
  EXPECT_TRUE(result.failures.empty()) << result.failures.front();
  EXPECT_EQ(result.manifests.removed, 1U);
  EXPECT_EQ(test::read_file(dir / "store/inputs/sha256/journal"),
            journal_line(kept.manifest, sample_manifest()) + "\n");
  EXPECT_EQ(uses_of(writable(dir), hex_of('a')), std::vector<DigestKey>{kept.manifest});
  EXPECT_TRUE(uses_of(writable(dir), hex_of('1')).empty());
  const FsckReport report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
}

} // namespace
} // namespace fingerprint::store

namespace fingerprint::store {
namespace {

// A digest whose raw bytes hold a newline and a backslash reads back whole;
// what is not a line of raw digests (a cut digest, a bad escape, a manifest
// without inputs) is unreadable, and a last line without its newline torn.
TEST(InputJournal, LinesOfEscapedRawDigestsReadBackAndDamageIsNamed)
{
  Manifest manifest;
  const std::string odd = "0a5c" + std::string(60, '1'); // a newline byte, a backslash
  manifest.entries = {{Role::compile, odd, 1, "/a.h"}, {Role::link, hex_of('2'), 2, "/b.a"}};
  normalize(manifest);
  const DigestKey key{digest::Algorithm::sha256, "5c0a" + std::string(60, '3')};
  const std::string line = journal_line(key, manifest);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.size(), 3U * 32U + 4U) << "two escapes in each of two digests";
  const std::string text =
    line + "\n\n" + line.substr(0, 40) + "\n" + reverse_line(key) + "\n" + "\\x" + line.substr(2) + "\n" + line;
  const JournalContents read = parse_journal(text, digest::Algorithm::sha256);
  ASSERT_EQ(read.entries.size(), 1U);
  EXPECT_EQ(read.entries[0].manifest, key.hex);
  EXPECT_EQ(read.entries[0].inputs, (std::vector<std::string_view>{manifest.entries[0].hex, manifest.entries[1].hex}));
  EXPECT_EQ(read.entries[0].line, 1U);
  EXPECT_EQ(read.unreadable, (std::vector<size_t>{3, 4, 5}));
  EXPECT_TRUE(read.torn_tail);
}

} // namespace
} // namespace fingerprint::store
