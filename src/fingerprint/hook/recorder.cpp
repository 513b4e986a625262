#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/text.hpp>

#include <climits>
#include <set>
#include <unistd.h>

namespace fingerprint::hook {

std::string
host_name()
{
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return "unknown";
  }
  return name;
}

Expected<size_t>
record(const RecordRequest& request,
       const std::function<void(const Error&)>& on_file_error,
       const std::function<void(const std::string&)>& on_warning)
{
  std::vector<std::string> all = request.produced;
  all.insert(all.end(), request.consumed.begin(), request.consumed.end());

  // Every file is digested before the store is touched: one bad file means
  // nothing is recorded, not half of the build step.
  const digest::DigestCache cache(digest::DigestCache::default_directory());
  digest::DigestOptions options;
  options.algorithm = request.algorithm;
  options.cache = &cache;
  auto digests = digest::digest_files(all, options);
  size_t failures = 0;
  for (const auto& result : digests) {
    if (!result) {
      on_file_error(result.error());
      ++failures;
    }
  }
  if (failures > 0) {
    return Error{"nothing recorded: " + std::to_string(failures) + (failures == 1 ? " file" : " files")
                 + " could not be digested"};
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

  const size_t produced_count = request.produced.size();
  std::vector<store::Event> events;
  events.reserve(produced_count * (1 + request.consumed.size()));
  for (size_t p = 0; p < produced_count; ++p) {
    store::Event event = common;
    event.event = store::EventKind::produced;
    event.digest = prefix + digests[p]->hex;
    event.size = digests[p]->size;
    event.path = request.produced[p];
    events.push_back(std::move(event));
  }
  for (size_t c = 0; c < request.consumed.size(); ++c) {
    const auto& file = *digests[produced_count + c];
    for (size_t p = 0; p < produced_count; ++p) {
      store::Event event = common;
      event.event = store::EventKind::consumed;
      event.digest = prefix + file.hex;
      event.size = file.size;
      event.path = request.consumed[c];
      event.product = prefix + digests[p]->hex;
      events.push_back(std::move(event));
    }
  }

  auto opened = store::open_store(request.store_root, store::Access::write);
  if (!opened) {
    return opened.error();
  }
  const auto& store = *opened;
  store::Store::Warnings warnings;
  auto appended = store->append(events, &warnings);
  if (on_warning) {
    for (const auto& warning : warnings) {
      on_warning(warning);
    }
  }
  if (!appended) {
    return appended.error();
  }
  return events.size();
}

} // namespace fingerprint::hook
