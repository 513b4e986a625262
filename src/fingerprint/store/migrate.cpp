#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/migrate.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <deque>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <queue>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace {

// Each build index's events as lines, in its order.
Expected<std::vector<std::vector<std::string>>>
build_index_lines(const DirectoryStore& source)
{
  std::vector<std::vector<std::string>> indexes;
  auto builds = source.list_builds();
  if (!builds) {
    return builds.error();
  }
  for (const auto& build : *builds) {
    auto index = source.read_build(build);
    if (!index) {
      return index.error();
    }
    auto& lines = indexes.emplace_back();
    for (const Event& event : index->events) {
      lines.push_back(serialize(event));
    }
  }
  return indexes;
}

// The names in the directory `fd`, sorted (none when it cannot be listed).
std::vector<std::string>
names_in(const util::Fd& fd)
{
  std::vector<std::string> names;
  const int copy = fd ? ::dup(fd.get()) : -1;
  DIR* dir = copy < 0 ? nullptr : ::fdopendir(copy);
  if (dir == nullptr) {
    if (copy >= 0) {
      ::close(copy);
    }
    return names;
  }
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      names.emplace_back(name);
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// Every input manifest of manifests/<algorithm>/<2 hex>/<hex>, checked.
// Anything else there (an interrupted writer's temporary file) is not a
// manifest and is left for fsck.
Expected<std::vector<MigrateManifest>>
read_manifests(const DirectoryStore& source)
{
  std::vector<MigrateManifest> manifests;
  auto root = util::open_directory(source.root(), false);
  if (!root) {
    return root.error();
  }
  auto top = util::open_directory_beneath(root->get(), layout::k_manifests, false);
  if (!top) {
    return make_error(source.root() + "/" + std::string(layout::k_manifests), top.error().message);
  }
  for (const std::string& algorithm_name : names_in(*top)) {
    const auto algorithm = digest::parse_algorithm(algorithm_name);
    if (!algorithm) {
      continue;
    }
    const std::string algorithm_dir = std::string(layout::k_manifests) + "/" + algorithm_name;
    auto by_algorithm = util::open_directory_beneath(root->get(), algorithm_dir, false);
    for (const std::string& prefix : by_algorithm ? names_in(*by_algorithm) : std::vector<std::string>{}) {
      auto bucket = util::open_directory_beneath(root->get(), algorithm_dir + "/" + prefix, false);
      for (const std::string& hex : bucket ? names_in(*bucket) : std::vector<std::string>{}) {
        if (!util::is_lower_hex(hex, 2 * digest::digest_size(*algorithm)) || !hex.starts_with(prefix)) {
          continue;
        }
        MigrateManifest read{source.root() + "/" + algorithm_dir + "/" + prefix + "/" + hex, {*algorithm, hex}, {}, {}};
        util::Fd fd(::openat(bucket->get(), hex.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        struct stat st
        {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
          return make_error(read.file, fd ? "not a regular file" : util::errno_text(errno));
        }
        auto bytes = util::read_all(fd.get());
        if (!bytes) {
          return make_error(read.file, bytes.error().message);
        }
        auto manifest = decode_manifest(*bytes, read.file);
        if (!manifest) {
          return manifest.error();
        }
        auto named = manifest_key(*algorithm, *bytes);
        if (!named) {
          return named.error();
        }
        if (manifest->algorithm != *algorithm || *named != read.key) {
          return make_error(read.file, "its bytes hash to " + named->str() + ", not to its name");
        }
        read.encoded = std::move(*bytes);
        read.manifest = std::move(*manifest);
        manifests.push_back(std::move(read));
      }
    }
  }
  return manifests;
}

// `manifests` in the order they were stored in, which queries answer in
// (a database numbers them as it stores them): each input's reverse index
// lists its manifests in that order; between those chains, the manifest
// whose first user was recorded first goes first.
Expected<void>
order_manifests(const DirectoryStore& source, Migration& migration, const std::vector<MigrateRow>& users)
{
  auto& manifests = migration.manifests;
  std::map<std::string, size_t> position; // digest -> index in manifests
  for (size_t i = 0; i < manifests.size(); ++i) {
    position.emplace(manifests[i].key.str(), i);
  }
  std::vector<std::string> first_use(manifests.size(), "~"); // after any time: never used
  auto saw = [&](const Event& event) {
    if (auto it = position.find(event.inputs); it != position.end() && event.time < first_use[it->second]) {
      first_use[it->second] = event.time;
    }
  };
  for (const MigrateLog& log : migration.logs) {
    for (const MigrateRow& row : log.rows) {
      saw(row.event);
    }
  }
  for (const MigrateRow& row : users) {
    saw(row.event);
  }
  std::set<DigestKey, bool (*)(const DigestKey&, const DigestKey&)> inputs(
    [](const DigestKey& a, const DigestKey& b) { return a.str() < b.str(); });
  for (const MigrateManifest& manifest : manifests) {
    for (const ManifestEntry& entry : manifest.manifest.entries) {
      inputs.insert(DigestKey{manifest.key.algorithm, entry.hex});
    }
  }
  std::vector<std::vector<size_t>> chains;
  for (const DigestKey& input : inputs) {
    std::vector<LogProblem> problems; // an unreadable line orders nothing
    auto uses = source.find_manifest_uses(input, problems);
    if (!uses) {
      return uses.error();
    }
    auto& chain = chains.emplace_back();
    std::set<size_t> seen;
    for (const ManifestUse& use : *uses) {
      if (auto it = position.find(use.manifest.str()); it != position.end() && seen.insert(it->second).second) {
        chain.push_back(it->second);
      }
    }
  }
  std::vector<MigrateManifest> ordered;
  ordered.reserve(manifests.size());
  for (size_t i : merge_orders(first_use, chains)) {
    ordered.push_back(std::move(manifests[i]));
  }
  manifests = std::move(ordered);
  return {};
}

// Whether `event`, found in the log of `log`, is there as a user of the
// input manifest `log` (a copy of its line in its product's log).
bool
is_manifest_user(const std::string& log, const Event& event)
{
  return event.event == EventKind::produced && event.digest != log && event.inputs == log;
}

// Each manifest user's line that its product's log lacks (a writer that
// died between the two appends) goes into its product's log; the rest are
// the copies a database does without.
void
keep_lost_users(Migration& migration, std::vector<MigrateRow> users)
{
  std::map<std::string, size_t> logs; // key -> position in migration.logs
  std::map<std::pair<std::string, std::string>, size_t> have;
  for (size_t i = 0; i < migration.logs.size(); ++i) {
    logs.emplace(migration.logs[i].key, i);
    for (const MigrateRow& row : migration.logs[i].rows) {
      have[{row.log, row.line}] += 1;
    }
  }
  for (MigrateRow& user : users) {
    if (auto it = have.find({user.event.digest, user.line}); it != have.end() && it->second > 0) {
      --it->second;
      continue;
    }
    auto [at, made] = logs.emplace(user.event.digest, migration.logs.size());
    if (made) {
      migration.logs.push_back({user.log, user.event.digest, {}});
    }
    user.log = user.event.digest;
    migration.logs[at->second].rows.push_back(std::move(user));
  }
}

// Everything is read, and must read cleanly, before anything is written.
Expected<Migration>
read_directory(const DirectoryStore& source, const std::function<void(size_t, size_t)>& progress)
{
  auto keys = source.list_logs();
  if (!keys) {
    return keys.error();
  }
  Migration migration;
  std::vector<MigrateRow> users; // lines of manifests' logs
  std::vector<std::string> unreadable;
  size_t problems = 0;
  for (size_t i = 0; i < keys->size(); ++i) {
    const DigestKey& key = (*keys)[i];
    auto contents = source.read_log(key);
    if (!contents) {
      return contents.error();
    }
    for (const auto& problem : contents->problems) {
      if (++problems <= 5) {
        unreadable.push_back(source.root() + "/" + problem.file + ":" + std::to_string(problem.line) + ": "
                             + problem.message);
      }
    }
    MigrateLog log{source.root() + "/" + key.log_path(), key.str(), {}};
    for (const Event& event : contents->events) {
      auto stored = stored_form(event);
      if (!stored) {
        return Error{log.file + ": " + stored.error().message + ": nothing was copied"};
      }
      MigrateRow row{log.key, std::move(stored->line), std::move(stored->event)};
      (is_manifest_user(log.key, row.event) ? users : log.rows).push_back(std::move(row));
    }
    if (!log.rows.empty() || contents->events.empty()) {
      migration.logs.push_back(std::move(log));
    }
    if (progress) {
      progress(i + 1, keys->size() * 2);
    }
  }
  if (problems > 0) {
    std::string message;
    for (const auto& line : unreadable) {
      message += line + "\n";
    }
    return Error{message + std::to_string(problems) + " unreadable line" + (problems == 1 ? "" : "s") + " in "
                 + source.root() + ": nothing was copied (run: fingerprint --store " + source.root()
                 + " fsck --repair, then migrate again)"};
  }
  migration.logs_read = keys->size();
  auto manifests = read_manifests(source);
  if (!manifests) {
    return Error{manifests.error().message + ": nothing was copied (run: fingerprint --store " + source.root()
                 + " fsck)"};
  }
  migration.manifests = std::move(*manifests);
  if (auto ordered = order_manifests(source, migration, users); !ordered) {
    return ordered.error();
  }
  keep_lost_users(migration, std::move(users));
  auto indexes = build_index_lines(source);
  if (!indexes) {
    return indexes.error();
  }
  migration.build_indexes = std::move(*indexes);
  auto builds = source.list_builds();
  if (!builds) {
    return builds.error();
  }
  for (const BuildRef& build : *builds) {
    auto document = source.read_provenance(build);
    if (!document) {
      return Error{document.error().message + ": nothing was copied (run: fingerprint --store " + source.root()
                   + " fsck)"};
    }
    if (*document) {
      migration.provenance.emplace_back(build, std::move(**document));
    }
  }
  return migration;
}

} // namespace

Expected<MigrateReport>
migrate(const DirectoryStore& source, const Store& target, const std::function<void(size_t, size_t)>& progress)
{
  auto migration = read_directory(source, progress);
  if (!migration) {
    return migration.error();
  }
  const size_t logs = migration->logs.size();
  auto report = target.import_from(*migration, [&](size_t done, size_t total) {
    if (progress && total > 0) {
      progress(logs + (logs * done) / total, logs * 2);
    }
  });
  if (!report) {
    return report.error();
  }
  // Write-once and named by their build: one put again is one already there.
  for (const auto& [build, document] : migration->provenance) {
    auto put = target.put_provenance(build, document);
    if (!put) {
      return Error{put.error().message + " (the events were copied; run migrate again)"};
    }
    ++(*put ? report->provenance_copied : report->provenance_present);
  }
  report->logs = migration->logs_read;
  report->events_read = 0; // each event once: a manifest's log holds copies
  for (const auto& log : migration->logs) {
    report->events_read += log.rows.size();
  }
  if (progress) {
    progress(logs * 2, logs * 2);
  }
  return report;
}

std::vector<size_t>
recording_order(const std::vector<const MigrateRow*>& rows, const std::vector<std::vector<std::string>>& build_indexes)
{
  // The chains: each log's rows, and each build index's, in order. An
  // index holds a log's own events only (never an installed copy's link).
  std::vector<std::vector<size_t>> chains;
  std::map<std::pair<std::string_view, std::string_view>, std::deque<size_t>> primary; // (log, line) -> rows
  std::vector<std::string> times;
  for (size_t row = 0; row < rows.size(); ++row) {
    if (row == 0 || rows[row]->log != rows[row - 1]->log) {
      chains.emplace_back();
    }
    chains.back().push_back(row);
    times.push_back(rows[row]->event.time);
    if (rows[row]->event.digest == rows[row]->log) {
      primary[{rows[row]->log, rows[row]->line}].push_back(row);
    }
  }
  for (const auto& lines : build_indexes) {
    auto& chain = chains.emplace_back();
    for (const auto& line : lines) {
      auto event = parse_event(line);
      if (!event) {
        continue;
      }
      if (auto it = primary.find({event->digest, line}); it != primary.end() && !it->second.empty()) {
        chain.push_back(it->second.front());
        it->second.pop_front();
      }
    }
  }
  return merge_orders(times, chains);
}

std::vector<size_t>
merge_orders(const std::vector<std::string>& time, const std::vector<std::vector<size_t>>& chains)
{
  const size_t count = time.size();
  std::vector<std::vector<size_t>> next(count);
  std::vector<size_t> waiting(count, 0);
  for (const auto& chain : chains) {
    for (size_t i = 1; i < chain.size(); ++i) {
      next[chain[i - 1]].push_back(chain[i]);
      ++waiting[chain[i]];
    }
  }
  using Entry = std::pair<std::string_view, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  std::set<Entry> blocked; // only used when the chains disagree
  for (size_t row = 0; row < count; ++row) {
    (waiting[row] == 0 ? static_cast<void>(ready.emplace(time[row], row))
                       : static_cast<void>(blocked.emplace(time[row], row)));
  }
  std::vector<size_t> order;
  std::vector<bool> placed(count, false);
  while (order.size() < count) {
    if (ready.empty()) {
      const Entry first = *blocked.begin(); // a cycle: break it
      blocked.erase(blocked.begin());
      waiting[first.second] = 0;
      ready.push(first);
    }
    const size_t row = ready.top().second;
    ready.pop();
    if (placed[row]) {
      continue;
    }
    placed[row] = true;
    order.push_back(row);
    for (size_t after : next[row]) {
      if (!placed[after] && waiting[after] > 0 && --waiting[after] == 0) {
        blocked.erase({time[after], after});
        ready.emplace(time[after], after);
      }
    }
  }
  return order;
}

} // namespace fingerprint::store
