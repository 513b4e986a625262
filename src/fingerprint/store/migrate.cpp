#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/migrate.hpp>

#include <deque>
#include <map>
#include <queue>
#include <set>
#include <string_view>

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

// Everything is read, and must read cleanly, before anything is written.
Expected<Migration>
read_directory(const DirectoryStore& source, const std::function<void(size_t, size_t)>& progress)
{
  auto keys = source.list_logs();
  if (!keys) {
    return keys.error();
  }
  Migration migration;
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
    auto& log = migration.logs.emplace_back(MigrateLog{source.root() + "/" + key.log_path(), key.str(), {}});
    for (const Event& event : contents->events) {
      auto stored = stored_form(event);
      if (!stored) {
        return Error{log.file + ": " + stored.error().message + ": nothing was copied"};
      }
      log.rows.push_back({log.key, std::move(stored->line), std::move(stored->event)});
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
  auto indexes = build_index_lines(source);
  if (!indexes) {
    return indexes.error();
  }
  migration.build_indexes = std::move(*indexes);
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
  report->logs = logs;
  report->events_read = 0;
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
