#pragma once

// Where everything is in a directory store, in one place: the names of its
// files and folders, the temporary files its writers leave while they work,
// and the one walk over the tree that listing, gc and fsck share.
//
//   <store>/fingerprint-store.json
//   <store>/objects/<algorithm>/<2 hex>/<hex>.jsonl   an artifact's log
//   <store>/builds/<project>/<build>.jsonl            a build's index
//   <store>/builds/<project>/<build>.provenance.json  its provenance (provenance.hpp), written once
//   <store>/manifests/<algorithm>/<2 hex>/<hex>        an input manifest (manifest.hpp)
//   <store>/inputs/<algorithm>/<2 hex>/<hex>           the manifests that list an input
//   <store>/inputs/<algorithm>/journal                 manifests not yet in those (input_journal.hpp)
//   <store>/builds.recent                             builds written since paths.index (path_index.hpp)
//   <store>/paths.index                               which builds name a path (gc, fsck --repair)
//   <store>/quarantine/<run>/...                      what fsck --repair set aside
//
// Not part of the store's interface: the PostgreSQL store has no files.

#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/store.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::store::layout {

inline constexpr std::string_view k_objects = "objects";
inline constexpr std::string_view k_builds = "builds";
inline constexpr std::string_view k_manifests = "manifests";
inline constexpr std::string_view k_inputs = "inputs";
inline constexpr std::string_view k_quarantine = "quarantine";
// Empty; appends and gc hold its flock() shared while they change a store,
// fsck --repair exclusively while it mends one-sided events.
inline constexpr std::string_view k_change_lock = "change.lock";
inline constexpr std::string_view k_log_suffix = ".jsonl";
inline constexpr std::string_view k_input_journal = "journal";
inline constexpr std::string_view k_provenance_suffix = ".provenance.json";

// objects/<algorithm>/<first 2 hex>/<hex>.jsonl
std::string artifact_log(const DigestKey& key);

// manifests/<algorithm>/<first 2 hex>/<hex>
std::string manifest_file(const DigestKey& key);
// inputs/<algorithm>/<first 2 hex>/<hex>: one reverse_line() per manifest
// that lists the artifact `key`.
std::string reverse_index(const DigestKey& key);
// inputs/<algorithm>/journal: one journal_line() per manifest stored since
// the last fold (input_journal.hpp).
std::string input_journal(digest::Algorithm algorithm);

// builds/<project>/<build>.jsonl, each name encoded as one component.
std::string build_index(const BuildRef& build);
// builds/<project>/<build>.provenance.json
std::string build_provenance(const BuildRef& build);

// A project name or build id as one path component: bytes outside
// [A-Za-z0-9._+-] (and a leading '.') become %XX; "" becomes "%".
std::string encode_component(std::string_view text);
std::string decode_component(std::string_view text);

// What a writer is doing while its temporary file exists.
enum class TempTag
{
  compact, // compaction or gc rewriting a log
  repair,  // fsck --repair rebuilding a log
  create,  // a new format file before it is linked into place
};

// "<name>.<tag>.<pid>", or for `create` "<name>.tmp.<pid>.<ns>", unique
// across hosts sharing the store (pids repeat there).
std::string temp_name(std::string_view name, TempTag tag);

// Whether `name` is a temporary file of an interrupted writer.
bool is_temp_name(std::string_view name);

// quarantine/<UTC time>-<pid>: one directory per repairing run.
std::string quarantine_run(int64_t now_ns);

// One file of the store as the walk found it.
struct Entry
{
  enum class Kind
  {
    artifact_log,
    build_index,
    manifest,      // manifests/<algorithm>/<2 hex>/<hex>
    reverse_index, // inputs/<algorithm>/<2 hex>/<hex>
    input_journal, // inputs/<algorithm>/journal
    provenance,    // builds/<project>/<build>.provenance.json
    stray,         // not a log: a leftover temporary file, a symbolic link, ...
  };
  std::string relative; // below the root
  Kind kind = Kind::stray;
  DigestKey key;  // artifact_log, manifest, reverse_index (the input's); input_journal: its algorithm
  BuildRef build; // build_index, provenance, decoded
  std::string why_stray;
  bool leftover = false; // a stray that is an interrupted writer's temporary file
  // A stray named like a log (a symbolic link, a directory): listing still
  // names it, so that reading it says what is wrong rather than the log
  // going unnoticed; `key` or `build` is set.
  bool log_name = false;
};

// A directory the walk could not list, and why.
struct WalkError
{
  std::string relative;
  std::string message;
  int error = 0; // errno
};

struct Walk
{
  std::vector<Entry> entries; // each directory in name order
  std::vector<WalkError> errors;
};

// Which parts of the tree to walk.
enum class WalkScope
{
  logs,       // objects/
  builds,     // builds/
  manifests,  // manifests/ and inputs/
  everything, // the root's leftovers, objects/, builds/, manifests/ and inputs/ (fsck)
};

// Walks the store below `root_fd` without following a symbolic link; a
// directory that does not exist walks as empty.
Walk walk(int root_fd, WalkScope scope);

} // namespace fingerprint::store::layout
