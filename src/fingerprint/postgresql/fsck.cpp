#include <fingerprint/postgresql/postgres_store.hpp>
#include <fingerprint/postgresql/schema.hpp>
#include <fingerprint/postgresql/session.hpp>
#include <fingerprint/store/build_summary.hpp>

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

// The manifests (fingerprint_manifests): each must decode, hash to its
// name and agree with its rows of fingerprint_manifest_entries; and every
// produced event's `inputs` must name one the store has. Nothing here is
// repaired: a manifest is rebuilt from nothing else, and an event naming a
// missing one still says what was produced.
Expected<void>
check_manifests(const Session& session, FsckReport& report)
{
  auto manifests =
    session.run("checking the input manifests",
                "SELECT m.digest, encode(m.bytes, 'hex'), coalesce((SELECT string_agg(x.role::text || ' ' || "
                "x.input || ' ' || x.size || ' ' || encode(x.path, 'hex'), ' ' ORDER BY x.position) "
                "FROM fingerprint_manifest_entries x WHERE x.manifest = m.id), '') "
                "FROM fingerprint_manifests m ORDER BY m.id");
  if (!manifests) {
    return manifests.error();
  }
  PGresult* rows = manifests->get();
  for (int row = 0; row < PQntuples(rows); ++row) {
    ++report.manifests;
    const std::string digest = PQgetvalue(rows, row, 0);
    auto finding = [&](const std::string& problem) {
      report.findings.push_back(
        {"fingerprint_manifests", 0, "input manifest " + digest + ": " + problem, FsckKind::damage, {}});
    };
    auto key = parse_digest_key(digest);
    if (!key) {
      finding(key.error().message);
      continue;
    }
    auto bytes = postgresql::bytes_of_hex(PQgetvalue(rows, row, 1));
    auto manifest = bytes ? decode_manifest(*bytes, "its bytes") : Expected<Manifest>(Error{"its bytes do not read"});
    if (!manifest) {
      finding(manifest.error().message);
      continue;
    }
    auto named = manifest_key(key->algorithm, *bytes);
    if (!named) {
      return named.error();
    }
    if (manifest->algorithm != key->algorithm || *named != *key) {
      finding("its bytes hash to " + named->str() + ", not to its name");
      continue;
    }
    std::string expected;
    const std::string prefix = std::string(digest::algorithm_name(key->algorithm)) + ":";
    for (const ManifestEntry& entry : manifest->entries) {
      expected += (expected.empty() ? "" : " ") + std::string(1, static_cast<char>(entry.role)) + " " + prefix
                  + entry.hex + " " + std::to_string(entry.size) + " " + postgresql::hex_of(entry.path);
    }
    if (expected != PQgetvalue(rows, row, 2)) {
      finding("its rows of fingerprint_manifest_entries disagree with its bytes");
    }
  }
  // Only a store written by this schema holds produced events with inputs.
  auto missing = session.run("checking the input manifests",
                             "SELECT e.id, e.inputs FROM fingerprint_events e WHERE e.inputs <> '' AND NOT EXISTS "
                             "(SELECT FROM fingerprint_manifests m WHERE m.digest = e.inputs) ORDER BY e.id");
  if (!missing) {
    return missing.error();
  }
  for (int row = 0; row < PQntuples(missing->get()); ++row) {
    report.findings.push_back(
      {"fingerprint_events",
       std::stoul(PQgetvalue(missing->get(), row, 0)),
       std::string("names input manifest ") + PQgetvalue(missing->get(), row, 1) + ", which the store does not have",
       FsckKind::damage,
       {}});
  }
  return {};
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
  // Columns 0-4, then the event columns (checked_row), then `listed`.
  const std::string select = "SELECT id, log, indexed, line, logged, " + postgresql::event_columns()
                             + ", listed FROM fingerprint_events ORDER BY id";
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
    // In its manifest's log too, which a directory store counts as a log.
    if (std::string_view(PQgetvalue(rows, row, PQnfields(rows) - 1)) == "t" && !event->inputs.empty()) {
      logs.insert(event->inputs);
      report.events += 1;
    }
    if (options.progress && (row + 1) % 1000 == 0) {
      options.progress(static_cast<size_t>(row + 1), static_cast<size_t>(count));
    }
  }
  report.logs = logs.size();
  report.build_indexes = indexes.size();
  if (auto checked = check_manifests(session, report); !checked) {
    return checked.error();
  }
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
  // Last, once damaged rows are set aside: the summary made from the rest.
  check_build_summaries(*this, report, options.repair, "fingerprint_build_summaries");
  // And the index by path (paths.cpp), written anew from the rows: a row is
  // checked by its stamp at every query, so nothing there is a finding.
  if (options.repair) {
    if (auto indexed = refresh_index_pack(); !indexed) {
      report.findings.push_back(
        {"fingerprint_path_index", 0, "not written anew: " + indexed.error().message, FsckKind::damage, {}});
    }
  }
  if (options.progress) {
    options.progress(static_cast<size_t>(count), static_cast<size_t>(count));
  }
  return report;
}

} // namespace fingerprint::store
