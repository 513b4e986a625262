#pragma once

#include <fingerprint/store/event.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/store/store.hpp>

#include <functional>
#include <string>
#include <vector>

// `migrate`: a directory store copied into another store. This half reads
// and checks the directory and knows the order to write in; the target's
// Store::import_from writes, so that the store layer knows no database.

namespace fingerprint::store {

class DirectoryStore;

// One event to copy, as the target is to hold it.
struct MigrateRow
{
  std::string log;  // the artifact whose log it is in: "sha256:<hex>"
  std::string line; // the line the directory holds for it
  Event event;      // the event as it reads back from `line`
};

// One artifact log of the directory.
struct MigrateLog
{
  std::string file;             // the log's file, for messages
  std::string key;              // its artifact: "sha256:<hex>"
  std::vector<MigrateRow> rows; // in the order they were appended
};

// One input manifest of the directory (manifests/), checked: it decodes and
// hashes to its name.
struct MigrateManifest
{
  std::string file; // for messages
  DigestKey key;
  std::string encoded;
  Manifest manifest;
};

// Everything migrate() read from a directory store, every line of it
// readable. A manifest's own log (the produced events made from it, each a
// copy of the line in its product's log) is not among `logs`: a database
// finds those events by their `inputs`. A line found only there (its
// product's copy lost) is in its product's log here, so nothing is lost.
struct Migration
{
  std::vector<MigrateManifest> manifests; // written before the events that name them
  std::vector<MigrateLog> logs;
  size_t logs_read = 0;                                     // manifests' logs included
  std::vector<std::vector<std::string>> build_indexes;      // each build index's lines, in its order
  std::vector<std::pair<BuildRef, std::string>> provenance; // builds' provenance documents, checked
};

// Copies every input manifest and artifact log of `source` into `target`,
// idempotently: manifests the target has and events already there (as many
// times as the directory has them) are not copied again. Refuses, before writing anything, a directory store with
// unreadable lines. `progress` gets (done, total): reading every log is the first half.
Expected<MigrateReport> migrate(const DirectoryStore& source,
                                const Store& target,
                                const std::function<void(size_t, size_t)>& progress);

// The order to write `rows` in (positions in it): `rows` holds the rows of
// each log together, each log's in its order, and every log and every build
// index of `build_indexes` keeps its order. Queries answer in those orders.
std::vector<size_t> recording_order(const std::vector<const MigrateRow*>& rows,
                                    const std::vector<std::vector<std::string>>& build_indexes);

// An order of `time.size()` rows that keeps every chain in `chains` (each a
// sequence of rows that must stay in that order: a log, a build index),
// earliest `time` first among the rows free to go, the lower row first on a
// tie. A directory store's logs and indexes were appended in one order, so
// one exists; were they edited out of step, the earliest row waiting goes
// first and the rest follow.
std::vector<size_t> merge_orders(const std::vector<std::string>& time, const std::vector<std::vector<size_t>>& chains);

} // namespace fingerprint::store
