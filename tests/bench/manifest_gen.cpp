// fingerprint_manifest_gen: fills a store with PRODUCTS products of
// INPUTS inputs each (PRODUCTS x INPUTS input relations), through the store
// API as the recorder writes them: one input manifest per product
// (put_manifest) and its produced event naming it (append_call), so that
// `fingerprint consumers HEADER` is timed on a store of that size.
//
//   fingerprint_manifest_gen STORE [PRODUCTS=10000] [INPUTS=100] [CONSUMERS=100]
//
// STORE is a directory or, in a build with PostgreSQL, a postgresql:// URL.
// Each product (a library or a program of one of 100 projects, 10 builds
// each) is linked from 4 objects of its own and one of 5 system libraries
// (role link) and compiled from 10 of 20 common headers (a config.h every
// other product reads) and the rest from a pool sized so that each pool
// header has about CONSUMERS consumers (role compile). Deterministic: the
// same arguments make the same relations, in any store.
//
// Prints, on stdout, the digests to query and how many products read each:
//   header=sha256:... header_consumers=N common=sha256:... common_consumers=M
//   relations=R manifests=P

#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/store/spool.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/text.hpp>
#ifdef FINGERPRINT_BENCH_WITH_POSTGRESQL
#include <fingerprint/postgresql/postgres_store.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace fingerprint;

// The sha256 hex of `seed`: a distinct, valid digest per seed.
std::string
hex_of(const std::string& seed)
{
  digest::Hasher hasher(digest::Algorithm::sha256);
  auto hex = hasher.digest_bytes(seed);
  if (!hex) {
    std::fprintf(stderr, "fingerprint_manifest_gen: %s\n", hex.error().message.c_str());
    std::exit(1);
  }
  return *hex;
}

struct File
{
  std::string hex;
  uint64_t size = 0;
  std::string path;
};

// `count` distinct indexes below `n` (Floyd's algorithm: no n-sized work).
std::vector<size_t>
sample(std::mt19937_64& rng, size_t n, size_t count)
{
  std::set<size_t> chosen;
  for (size_t j = n - count; j < n; ++j) {
    const size_t t = std::uniform_int_distribution<size_t>(0, j)(rng);
    if (!chosen.insert(t).second) {
      chosen.insert(j);
    }
  }
  return {chosen.begin(), chosen.end()};
}

int
fail(const std::string& message)
{
  std::fprintf(stderr, "fingerprint_manifest_gen: %s\n", message.c_str());
  return 1;
}

} // namespace

int
main(int argc, char** argv)
{
  if (argc < 2 || argc > 5) {
    std::fprintf(stderr, "usage: fingerprint_manifest_gen STORE [PRODUCTS=10000] [INPUTS=100] [CONSUMERS=100]\n");
    return 2;
  }
  const std::string location = argv[1];
  const size_t products = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 10'000;
  const size_t inputs = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 100;
  const size_t consumers = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 100;
  constexpr size_t k_objects = 4;          // link inputs of its own
  constexpr size_t k_system_libraries = 5; // one of them linked
  constexpr size_t k_common_pool = 20;     // config.h and the like
  constexpr size_t k_common_each = 10;     // of them read per product
  if (products == 0 || consumers == 0 || inputs < k_objects + 1 + k_common_each + 1) {
    return fail("PRODUCTS and CONSUMERS must be positive, INPUTS at least 16");
  }
  const size_t from_pool = inputs - k_objects - 1 - k_common_each;
  const size_t pool_size = std::max(from_pool, products * from_pool / consumers);

#ifdef FINGERPRINT_BENCH_WITH_POSTGRESQL
  store::enable_postgresql();
#endif
  auto opened = store::open_store(location, store::Access::write);
  if (!opened) {
    return fail(opened.error().message);
  }
  const store::Store& target = **opened;

  auto header = [](const std::string& kind, size_t i) {
    const std::string path = "/home/ci/work/monorepo/" + kind + "/include/" + kind + "/module" + std::to_string(i % 97)
                             + "/header" + std::to_string(i) + ".hpp";
    return File{hex_of(path), 2'000 + (i * 7'919) % 40'000, path};
  };
  std::vector<File> system;
  for (size_t i = 0; i < k_system_libraries; ++i) {
    const std::string path = "/usr/lib/x86_64-linux-gnu/libsystem" + std::to_string(i) + ".so.1";
    system.push_back({hex_of(path), 1'500'000 + i * 1'000, path});
  }
  std::vector<File> common;
  for (size_t i = 0; i < k_common_pool; ++i) {
    common.push_back(header("common", i));
  }
  std::vector<File> pool;
  pool.reserve(pool_size);
  for (size_t i = 0; i < pool_size; ++i) {
    pool.push_back(header("lib", i));
  }

  std::mt19937_64 rng(20261201);
  size_t header_consumers = 0;
  size_t common_consumers = 0;
  size_t relations = 0;
  const int64_t start_ns = 1'780'000'000'000'000'000;
  for (size_t p = 0; p < products; ++p) {
    const size_t project = p % 100;
    const size_t build = (p / 100) % 10;
    const size_t target_number = p / 1'000;
    const std::string project_name = "project-" + std::to_string(project);
    const std::string build_dir = "/home/ci/work/" + project_name + "/build";

    store::Manifest manifest;
    manifest.algorithm = digest::Algorithm::sha256;
    for (size_t o = 0; o < k_objects; ++o) {
      const std::string path =
        build_dir + "/src/CMakeFiles/t" + std::to_string(target_number) + ".dir/source" + std::to_string(o) + ".cpp.o";
      manifest.entries.push_back({store::Role::link, hex_of(path + " " + std::to_string(p)), 40'000 + o * 1'000, path});
    }
    const File& library = system[p % k_system_libraries];
    manifest.entries.push_back({store::Role::link, library.hex, library.size, library.path});
    for (size_t c : sample(rng, k_common_pool, k_common_each)) {
      manifest.entries.push_back({store::Role::compile, common[c].hex, common[c].size, common[c].path});
      common_consumers += c == 0 ? 1 : 0;
    }
    for (size_t h : sample(rng, pool_size, from_pool)) {
      manifest.entries.push_back({store::Role::compile, pool[h].hex, pool[h].size, pool[h].path});
      header_consumers += h == 0 ? 1 : 0;
    }
    store::normalize(manifest);
    relations += manifest.entries.size();
    const std::string encoded = store::encode(manifest);
    auto key = store::manifest_key(manifest.algorithm, encoded);
    if (!key) {
      return fail(key.error().message);
    }
    if (auto put = target.put_manifest(*key, encoded, manifest); !put) {
      return fail(put.error().message);
    }

    store::Event event;
    event.event = store::EventKind::produced;
    const std::string product_path =
      build_dir + "/lib/libt" + std::to_string(target_number) + ".so." + std::to_string(build);
    event.digest = "sha256:" + hex_of(product_path + " " + std::to_string(p));
    event.size = 1'000'000 + p;
    event.path = product_path;
    event.project = project_name;
    event.version = "1." + std::to_string(build) + ".0";
    event.target = "t" + std::to_string(target_number);
    event.build = "build-" + std::to_string(100'000 + build);
    event.build_dir = build_dir;
    event.host = "ci-runner-" + std::to_string(p % 8);
    event.time = util::format_rfc3339(start_ns + static_cast<int64_t>(p) * 1'000'000'000);
    event.inputs = key->str();
    const std::string call = store::is_database_url(location) ? store::new_call_id() : std::string();
    if (auto appended = target.append_call(call, {event}); !appended) {
      return fail(appended.error().message);
    }
    if ((p + 1) % 1'000 == 0) {
      std::fprintf(stderr, "  %zu/%zu products\n", p + 1, products);
    }
  }
  std::printf("header=sha256:%s header_consumers=%zu common=sha256:%s common_consumers=%zu relations=%zu "
              "manifests=%zu\n",
              pool[0].hex.c_str(),
              header_consumers,
              common[0].hex.c_str(),
              common_consumers,
              relations,
              products);
  return 0;
}
