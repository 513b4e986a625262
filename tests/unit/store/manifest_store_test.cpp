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
#include <fcntl.h>
#include <filesystem>
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

TEST(ManifestStore, ANewStoreIsFormat2AndNamesTheNewTrees)
{
  TempDir dir;
  writable(dir);
  const auto format = nlohmann::json::parse(test::read_file(dir / "store/fingerprint-store.json"));
  EXPECT_EQ(format["format"], 2);
  EXPECT_NE(format["layout"].get<std::string>().find("manifests/"), std::string::npos);
  EXPECT_NE(format["layout"].get<std::string>().find("inputs/"), std::string::npos);
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
  EXPECT_EQ(format["format"], 2);
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
  const layout::Walk walk = layout::walk(root.get(), layout::WalkScope::manifests);
  EXPECT_TRUE(walk.errors.empty());
  size_t manifests = 0;
  size_t reverse = 0;
  size_t leftovers = 0;
  for (const auto& entry : walk.entries) {
    manifests += entry.kind == layout::Entry::Kind::manifest ? 1 : 0;
    reverse += entry.kind == layout::Entry::Kind::reverse_index ? 1 : 0;
    leftovers += entry.leftover ? 1 : 0;
    EXPECT_FALSE(entry.kind == layout::Entry::Kind::artifact_log) << entry.relative << ": not in objects/";
    if (entry.kind == layout::Entry::Kind::manifest) {
      EXPECT_EQ(entry.key, recorded.manifest);
    }
  }
  EXPECT_EQ(manifests, 1U);
  EXPECT_EQ(reverse, 5U); // one per input of sample_manifest()
  EXPECT_EQ(leftovers, 1U);
}

TEST(ManifestStore, FsckFindsNothingWrongInAHealthyStoreAndCountsManifests)
{
  TempDir dir;
  const auto store = writable(dir);
  record_one(store, '8', "1", sample_manifest());
  record_one(store, '9', "1", sample_manifest()); // the same inputs: one manifest, two users
  const FsckReport report = checked(store);
  EXPECT_TRUE(report.findings.empty()) << findings_text(report);
  EXPECT_EQ(report.manifests, 1U);
  EXPECT_EQ(report.reverse_indexes, 5U);
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
