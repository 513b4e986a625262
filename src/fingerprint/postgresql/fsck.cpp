#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>

#include <set>

namespace fingerprint::store {

using postgresql::Session;
using postgresql::text_array;

namespace {

// The event of one row, or what is wrong with the row: its line must read,
// its event columns agree with the line, and it must be in the right log
// and index.
Expected<Event>
checked_row(PGresult* rows, int row)
{
  auto cell = [&](int column) { return std::string_view(PQgetvalue(rows, row, column)); };
  const std::string_view log = cell(1);
  auto event = parse_event(cell(3));
  if (!event) {
    return event;
  }
  int column = 5;
  for (const EventField& field : k_event_fields) {
    if (!field.column.empty() && cell(column++) != postgresql::column_value(*event, field)) {
      return Error{"the row's columns disagree with its event"};
    }
  }
  if (log != event->digest && !(event->event == EventKind::installed && event->from == log)) {
    return Error{"event for " + event->digest + " in the log of " + std::string(log)};
  }
  if (cell(2) == "t" && log != event->digest) {
    return Error{"a link row marked as in its build's index"};
  }
  return event;
}

} // namespace

Expected<FsckReport>
PostgresStore::fsck(const FsckOptions& options) const
{
  FsckReport report;
  if (!m_has_schema) {
    return report;
  }
  const Session session(m_connection->conn, m_location);
  // Columns 0-4, then the event columns (checked_row).
  const std::string select =
    "SELECT id, log, indexed, line, logged, " + postgresql::event_columns() + " FROM fingerprint_events ORDER BY id";
  auto result = session.run("checking the events", select.c_str());
  if (!result) {
    return result.error();
  }
  PGresult* rows = result->get();
  const int count = PQntuples(rows);
  std::set<std::string> logs;
  std::set<std::pair<std::string, std::string>> indexes;
  std::vector<std::string> bad_ids;
  std::vector<std::string> bad_problems;
  for (int row = 0; row < count; ++row) {
    const std::string id = PQgetvalue(rows, row, 0);
    auto event = checked_row(rows, row);
    if (!event) {
      std::string problem = event.error().message;
      FsckFinding finding{"fingerprint_events", std::stoul(id), problem, FsckKind::damage, {}};
      if (options.repair) {
        finding.repair = "moved to fingerprint_quarantine";
      }
      report.findings.push_back(std::move(finding));
      bad_ids.push_back(id);
      bad_problems.push_back(std::move(problem));
      continue;
    }
    if (std::string_view(PQgetvalue(rows, row, 4)) == "t") {
      logs.insert(PQgetvalue(rows, row, 1));
      report.events += 1;
    }
    if (std::string_view(PQgetvalue(rows, row, 2)) == "t") {
      indexes.emplace(event->project, event->build);
      report.events += 1;
    }
    if (options.progress && (row + 1) % 1000 == 0) {
      options.progress(static_cast<size_t>(row + 1), static_cast<size_t>(count));
    }
  }
  report.logs = logs.size();
  report.build_indexes = indexes.size();
  if (options.repair && !bad_ids.empty()) {
    auto moved = session.transaction("setting damaged rows aside", [&]() -> Expected<void> {
      auto copied = session.run("setting damaged rows aside",
                                "INSERT INTO fingerprint_quarantine (id, log, line, problem) "
                                "SELECT e.id, e.log, e.line, p.problem FROM fingerprint_events e "
                                "JOIN unnest($1::bigint[], $2::text[]) AS p(id, problem) ON e.id = p.id",
                                {text_array(bad_ids), text_array(bad_problems)});
      if (!copied) {
        return copied.error();
      }
      auto removed = session.run("setting damaged rows aside",
                                 "DELETE FROM fingerprint_events WHERE id = ANY($1::bigint[])",
                                 {text_array(bad_ids)});
      if (!removed) {
        return removed.error();
      }
      return {};
    });
    if (!moved) {
      return moved.error();
    }
    report.repaired = bad_ids.size();
    report.quarantine = "fingerprint_quarantine";
  }
  if (options.progress) {
    options.progress(static_cast<size_t>(count), static_cast<size_t>(count));
  }
  return report;
}

} // namespace fingerprint::store
