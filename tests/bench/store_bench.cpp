// BM_AppendEvent: appending stays cheap however long the log already is.
// BM_LoadRecord against BM_DomParseReference: the SAX event parser and the
// fold, judged against the plain nlohmann DOM parse of the same lines.

#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/util/text.hpp>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>

namespace fingerprint::bench {

namespace {

using store::DirectoryStore;
using store::Event;

// "sha256:" and the digest of `seed`: a valid, distinct key per seed.
std::string
fake_digest(const std::string& seed)
{
  digest::Hasher hasher(digest::Algorithm::sha256);
  auto hex = hasher.digest_bytes(seed);
  if (!hex) {
    throw std::runtime_error(hex.error().message);
  }
  return "sha256:" + *hex;
}

// The n-th consumer of `artifact`: a build of one of a few dozen projects that
// linked it, with fields of the length a real run writes.
Event
consumer_event(const std::string& artifact, size_t n)
{
  Event event;
  event.event = store::EventKind::consumed;
  event.digest = artifact;
  event.size = 2'345'678;
  event.path = "/home/ci/work/libcore/build/src/core/libcore.so.3.2.1";
  event.project = "app-" + std::to_string(n % 40);
  event.version = "1." + std::to_string(n % 17) + ".0";
  event.target = "app_main";
  event.build = "build-" + std::to_string(100'000 + n);
  event.build_dir = "/home/ci/work/" + event.project + "/build";
  event.host = "ci-runner-" + std::to_string(n % 8);
  event.time = util::format_rfc3339(1'780'000'000'000'000'000 + static_cast<int64_t>(n) * 60'000'000'000);
  event.product = fake_digest("product " + std::to_string(n));
  return event;
}

// A store with one artifact whose log holds `events` consumer events, written
// straight to the file (appending them one by one would take minutes).
struct LogFixture
{
  std::string root;
  std::string artifact;
  std::string log_path; // absolute
  std::string bytes;    // the log's contents

  LogFixture(const ScratchDir& scratch, const std::string& name, size_t events)
    : root(scratch.path() + "/" + name)
    , artifact(fake_digest("artifact " + name))
  {
    if (auto created = DirectoryStore::open_for_writing(root); !created) {
      throw std::runtime_error(created.error().message);
    }
    auto key = store::parse_digest_key(artifact);
    if (!key) {
      throw std::runtime_error(key.error().message);
    }
    log_path = root + "/" + key->log_path();
    std::filesystem::create_directories(std::filesystem::path(log_path).parent_path());
    for (size_t n = 0; n < events; ++n) {
      bytes += store::serialize(consumer_event(artifact, n));
      bytes += '\n';
    }
    std::ofstream out(log_path, std::ios::binary);
    out << bytes;
    if (!out.flush()) {
      throw std::runtime_error(log_path + ": cannot write");
    }
  }

  store::DigestKey
  key() const
  {
    return *store::parse_digest_key(artifact);
  }
};

// Fixtures are made on first use, so a filtered run only pays for its own.
LogFixture&
fixture(const ScratchDir& scratch, const std::string& name, size_t events)
{
  static std::map<std::string, std::unique_ptr<LogFixture>> fixtures;
  auto& slot = fixtures[name];
  if (!slot) {
    slot = std::make_unique<LogFixture>(scratch, name, events);
  }
  return *slot;
}

void
append_event(benchmark::State& state, ScratchDir& scratch, size_t events)
{
  LogFixture& log = fixture(scratch, "append-" + std::to_string(events), events);
  const std::vector<Event> batch{consumer_event(log.artifact, events)};
  for (auto _ : state) {
    // A run opens the store and appends its events: both are the cost. The
    // log grows by one line per iteration (a fixed 2,000, see below), which
    // leaves the two sizes 25x apart; truncating it back between iterations
    // made the timing depend on the file system's block reallocation.
    auto store = DirectoryStore::open_for_writing(log.root);
    if (!store) {
      state.SkipWithError(store.error().message.c_str());
      break;
    }
    if (auto ok = store->append(batch); !ok) {
      state.SkipWithError(ok.error().message.c_str());
      break;
    }
  }
}

void
load_record(benchmark::State& state, ScratchDir& scratch, size_t events)
{
  LogFixture& log = fixture(scratch, "log-" + std::to_string(events), events);
  auto store = DirectoryStore::open_for_reading(log.root);
  if (!store) {
    state.SkipWithError(store.error().message.c_str());
    return;
  }
  const store::DigestKey key = log.key();
  for (auto _ : state) {
    auto record = store::load_record(*store, key);
    if (!record || record->consumers.size() != events || !record->problems.empty()) {
      state.SkipWithError(record ? "the record does not hold every event" : record.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(record->consumers.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
}

// The same lines as load_record reads, each parsed into a DOM; no file I/O.
void
dom_parse_reference(benchmark::State& state, ScratchDir& scratch, size_t events)
{
  const LogFixture& log = fixture(scratch, "log-" + std::to_string(events), events);
  for (auto _ : state) {
    size_t parsed = 0;
    std::string_view text = log.bytes;
    while (!text.empty()) {
      const size_t newline = text.find('\n');
      auto object = nlohmann::json::parse(text.substr(0, newline));
      benchmark::DoNotOptimize(object);
      text.remove_prefix(newline + 1);
      ++parsed;
    }
    if (parsed != events) {
      state.SkipWithError("wrong number of lines");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
}

} // namespace

void
register_store_benchmarks(ScratchDir& scratch)
{
  for (const size_t events : {size_t{500}, size_t{50'000}}) {
    benchmark::RegisterBenchmark(
      ("BM_AppendEvent/" + std::to_string(events)).c_str(), append_event, std::ref(scratch), events)
      ->Unit(benchmark::kMicrosecond);
  }
  constexpr size_t k_record_events = 5'000;
  benchmark::RegisterBenchmark(
    ("BM_LoadRecord/" + std::to_string(k_record_events)).c_str(), load_record, std::ref(scratch), k_record_events)
    ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("BM_DomParseReference/" + std::to_string(k_record_events)).c_str(),
                               dom_parse_reference,
                               std::ref(scratch),
                               k_record_events)
    ->Unit(benchmark::kMillisecond);
}

} // namespace fingerprint::bench
