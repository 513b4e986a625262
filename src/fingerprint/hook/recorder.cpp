#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/digest/signing.hpp>
#include <fingerprint/hook/provenance.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/store/spool.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/elf.hpp>
#include <fingerprint/util/text.hpp>

#include <climits>
#include <cstdlib>
#include <optional>
#include <set>
#include <unistd.h>

namespace fingerprint::hook {

namespace {

// What one hook delivers of a journal at most (README, "A PostgreSQL store,
// for build fleets"): a delivered call takes a millisecond or two, so a hook after a
// long outage adds at most a fifth of a second to its build step; `sync`
// or the next hooks deliver the rest.
constexpr store::DeliveryLimit k_hook_delivery{.calls = 50, .ns = 200'000'000};

} // namespace

std::string
host_name()
{
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return "unknown";
  }
  return name;
}

Expected<void>
sign_events(std::vector<store::Event>& events)
{
  const char* path = std::getenv("FINGERPRINT_SIGNING_KEY");
  if (path == nullptr || *path == '\0') {
    return {};
  }
  auto key = digest::SigningKey::load(path);
  if (!key) {
    return Error{"$FINGERPRINT_SIGNING_KEY: " + key.error().message};
  }
  const std::string signer = digest::base64_encode(key->raw_public());
  for (store::Event& event : events) {
    event.signer = signer;
    auto signature = key->sign(store::signed_form(event));
    if (!signature) {
      return Error{"$FINGERPRINT_SIGNING_KEY: " + std::string(path) + ": " + signature.error().message};
    }
    event.sig = digest::base64_encode(*signature);
  }
  return {};
}

Expected<size_t>
record(const RecordRequest& request,
       const std::function<void(const Error&)>& on_file_error,
       const std::function<void(const std::string&)>& on_warning)
{
  std::vector<std::string> all = request.produced;
  all.reserve(all.size() + request.consumed.size());
  for (const Input& input : request.consumed) {
    all.push_back(input.path);
  }

  // Every file is digested before the store is touched: one bad file means
  // nothing is recorded, not half of the build step.
  const digest::DigestCache cache(digest::DigestCache::default_directory());
  digest::DigestOptions options;
  options.algorithm = request.algorithm;
  options.cache = &cache;
  options.memo = request.memo.get();
  options.memo_first = request.produced.size();
  auto digests = digest::digest_files(all, options);
  size_t failures = 0;
  std::vector<std::string> gone;
  for (size_t i = 0; i < digests.size(); ++i) {
    if (!digests[i]) {
      const size_t c = i - request.produced.size();
      if (i >= request.produced.size() && request.consumed[c].may_be_gone && digests[i].error().missing) {
        gone.push_back(request.consumed[c].path);
        continue;
      }
      on_file_error(digests[i].error());
      ++failures;
    }
  }
  if (failures > 0) {
    return Error{"nothing recorded: " + std::to_string(failures) + (failures == 1 ? " file" : " files")
                 + " could not be digested"};
  }

  const size_t produced_count = request.produced.size();
  store::Manifest manifest;
  manifest.algorithm = request.algorithm;
  manifest.entries.reserve(request.consumed.size());
  if (!gone.empty()) {
    on_warning(request.target + ": " + std::to_string(gone.size())
               + " of the files it read are gone, not recorded (the first: " + gone.front() + ")");
  }
  for (size_t c = 0; c < request.consumed.size(); ++c) {
    if (!digests[produced_count + c]) {
      continue; // gone (above)
    }
    const auto& file = *digests[produced_count + c];
    manifest.entries.push_back({request.consumed[c].role, file.hex, file.size, request.consumed[c].path});
  }
  store::normalize(manifest);
  std::string encoded_manifest;
  std::optional<store::DigestKey> manifest_key;
  if (!manifest.entries.empty()) {
    encoded_manifest = store::encode(manifest);
    auto key = store::manifest_key(request.algorithm, encoded_manifest);
    if (!key) {
      return key.error();
    }
    manifest_key = std::move(*key);
  }

  store::Event common;
  common.project = request.project;
  common.version = request.version;
  common.target = request.target;
  common.build = request.build_id;
  common.build_dir = request.build_dir;
  common.host = host_name();
  common.time = util::format_rfc3339(util::now_ns());
  const std::string prefix = std::string(digest::algorithm_name(request.algorithm)) + ":";

  std::vector<store::Event> events;
  events.reserve(produced_count);
  for (size_t p = 0; p < produced_count; ++p) {
    store::Event event = common;
    event.event = store::EventKind::produced;
    event.digest = prefix + digests[p]->hex;
    event.size = digests[p]->size;
    event.path = request.produced[p];
    // What a stripped or split copy of it is matched by (util/elf.hpp).
    event.build_id = util::gnu_build_id(event.path).value_or("");
    if (manifest_key) {
      event.inputs = manifest_key->str();
    }
    events.push_back(std::move(event));
  }

  if (auto signed_events = sign_events(events); !signed_events) {
    return Error{"nothing recorded: " + signed_events.error().message};
  }

  // The id goes with the events whichever way they travel: a COMMIT whose
  // answer was lost and the journaled copy of the same call are one call.
  // A directory store has no use for it (Store::append_call).
  const std::string call = store::is_database_url(request.store_root) ? store::new_call_id() : std::string();
  std::optional<store::Spool> spool;
  if (request.spool && store::is_database_url(request.store_root)) {
    if (auto found = store::Spool::for_database(request.store_root)) {
      spool = std::move(*found);
    }
  }
  // The manifest travels with the events that name it.
  std::vector<store::SpooledManifest> manifests;
  if (spool && manifest_key) {
    manifests.emplace_back(*manifest_key, encoded_manifest);
  }
  // The build's provenance, with the first call of the build that reaches
  // the store or its journal (hook/provenance.hpp).
  // Its warnings wait until the events are stored or journaled: a hook
  // whose build tool was killed writes to a closed pipe and dies of it.
  struct Deferred
  {
    const std::function<void(const std::string&)>& out;
    std::vector<std::string> lines;
    ~Deferred()
    {
      for (const auto& line : lines) {
        if (out) {
          out(line);
        }
      }
    }
  } deferred{on_warning, {}};
  const std::optional<PendingProvenance> provenance =
    pending_provenance(request, [&](const std::string& warning) { deferred.lines.push_back(warning); });
  std::optional<store::SpooledProvenance> spooled_provenance;
  if (provenance) {
    spooled_provenance = store::SpooledProvenance{provenance->build, provenance->document};
  }
  auto journal = [&](const Error& error) -> Expected<size_t> {
    if (!spool || !error.unavailable) {
      return error;
    }
    auto spooled = spool->add(call, events, manifests, true, spooled_provenance);
    if (!spooled) {
      return Error{error.message + "; and the events could not be spooled: " + spooled.error().message};
    }
    if (provenance) {
      mark_provenance_sent(*provenance);
    }
    if (spooled->first_of_build && on_warning) {
      on_warning(error.message + "; out of reach: " + std::to_string(events.size())
                 + (events.size() == 1 ? " event" : " events") + " spooled to " + spool->directory()
                 + ", delivered on the next contact or by `fingerprint sync` (other targets of build "
                 + request.build_id + " are spooled without a warning)");
    }
    return events.size();
  };

  auto opened = store::open_store(request.store_root, store::Access::write);
  if (!opened) {
    return journal(opened.error());
  }
  const auto& store = *opened;
  if (spool && spool->has_waiting()) {
    // A hook does not wait for another's delivery, and delivers a few calls
    // only (k_hook_delivery): the first hook after a long outage must not
    // hold its build step for the whole journal.
    auto delivered = spool->deliver(*store, false, {}, k_hook_delivery);
    if (on_warning) {
      for (const auto& problem : delivered.problems) {
        on_warning(problem);
      }
      if (delivered.delivered > 0 || delivered.cut_short) {
        std::string note = store->location() + ": delivered " + std::to_string(delivered.events) + " events of "
                           + std::to_string(delivered.delivered) + " record calls spooled while it was out of reach";
        if (delivered.cut_short) {
          note += "; more wait in " + spool->directory()
                  + " (the next hooks deliver them, a few each; or run: fingerprint sync)";
        }
        on_warning(note);
      }
    }
    if (delivered.error) {
      if (delivered.error->unavailable) {
        return journal(*delivered.error);
      }
      if (on_warning) {
        on_warning(delivered.error->message);
      }
    }
    // Older calls still wait (another process delivers them right now, or
    // this hook's share is done): this call goes behind them, in the
    // journal, so that the store takes every call in the order it was made.
    // Appended directly only if it cannot be journaled.
    if (spool->has_waiting()) {
      if (auto spooled = spool->add(call, events, manifests, false, spooled_provenance)) {
        if (provenance) {
          mark_provenance_sent(*provenance);
        }
        return events.size();
      }
    }
  }
  store::Store::Warnings warnings;
  bool manifest_was_there = false;
  if (manifest_key) {
    // Before the events that name it: a manifest the store has is whole.
    auto put = store->put_manifest(*manifest_key, encoded_manifest, manifest, &warnings);
    if (!put) {
      return journal(put.error());
    }
    manifest_was_there = !*put;
  }
  auto appended = store->append_call(call, events, &warnings);
  if (appended && manifest_was_there) {
    // A gc may have removed it, left without users, after it was found: gc
    // does so under the lock of the manifest's log, which the append waits
    // for, so a manifest gone by now is stored again (store/gc.cpp).
    if (auto again = store->put_manifest(*manifest_key, encoded_manifest, manifest, &warnings); !again) {
      warnings.push_back(again.error().message);
    }
  }
  if (on_warning) {
    for (const auto& warning : warnings) {
      on_warning(warning);
    }
  }
  if (!appended) {
    return journal(appended.error());
  }
  if (provenance) {
    // After the events: a build's provenance is never without its build.
    // Not stored, it is tried again by the build's next hook.
    if (auto put = store->put_provenance(provenance->build, provenance->document); put) {
      mark_provenance_sent(*provenance);
    } else if (on_warning) {
      on_warning("build provenance not recorded: " + put.error().message);
    }
  }
  return events.size();
}

} // namespace fingerprint::hook
