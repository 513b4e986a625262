#pragma once

// The local journal of a database store (README, "A PostgreSQL store, for
// build fleets"): what a hook could not deliver because the server was out
// of reach, kept until the next contact or `fingerprint sync` delivers it,
// in order and exactly once.
//
//   <spool root>/<key of the URL>/
//     url                      the database's URL, its password masked (for people and `sync`)
//     lock                     flock()ed by whoever delivers; never unlinked
//     sequence                 the last entry's number, flock()ed while an entry is added
//     calls/<seq>-<call>.jsonl   one record call: a header line (with its build's provenance,
//                              store/provenance.hpp, when the call carries it), its input
//                              manifests (one line each, their bytes in hex), then its events
//                              as a store writes them
//     warned/<digest>          one per build that was told it spooled (a warning per build, not per target)
//     refused/                 calls the database refused outright, set aside (never deleted;
//                              `sync --retry-refused` puts them back)
//     damaged/                 entries that cannot be read, set aside (never deleted)
//
// One file per call, written to a temporary name, fsynced and renamed into
// calls/: a call is in the journal whole or not at all, and leaves it by one
// unlink. The name starts with a number that only grows (the time in ns,
// or the last number + 1 when the clock went back), so listing order is
// delivery order.
// `calls/` exists only while something waits: a hook with nothing to
// deliver pays one stat() (has_waiting). The call id goes into the database
// in the same transaction as the events (Store::append_call), so a deliverer
// killed between the commit and the unlink cannot deliver a call twice. A
// call's input manifests are put before its events (Store::put_manifest):
// named by their bytes, a manifest put again is the same one, stored once.

#include <fingerprint/store/event.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fingerprint::store {

// `url` with any password replaced by "***" (user:***@host, password=***);
// masking a masked URL changes nothing.
std::string mask_url_password(std::string_view url);

// A new record call's id: 32 random hex digits, unique across a fleet.
std::string new_call_id();

// Where the journals live: $FINGERPRINT_SPOOL_DIR, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/fingerprint/spool. Not the cache
// directory: what waits there is the only copy of those events, and caches
// are deleted freely. Empty: spooling is off (FINGERPRINT_SPOOL_DIR set
// empty, or no HOME).
std::string spool_root();

// What waits in one journal.
struct SpoolContents
{
  size_t calls = 0;
  size_t events = 0;
  size_t manifests = 0;              // input manifests that go with the calls
  std::vector<std::string> problems; // entries that cannot be read, each naming its file
  size_t refused = 0;                // entries in refused/ (the database would not take them)
  size_t damaged = 0;                // entries in damaged/ (unreadable, set aside)
};

// How much one delivery may do: a hook delivers a little, `sync` all.
struct DeliveryLimit
{
  size_t calls = SIZE_MAX; // at most this many calls
  int64_t ns = 0;          // and no new call after this long (0: no limit); at least one is delivered
};

// What one delivery did.
struct DeliveryReport
{
  size_t delivered = 0;    // calls the store took now
  size_t already = 0;      // calls it held already (their deliverer died before removing them)
  size_t events = 0;       // events of the calls delivered now
  size_t manifests = 0;    // input manifests the store took now (those it had are not counted)
  size_t refused = 0;      // calls the store refused, moved to refused/
  size_t damaged = 0;      // unreadable entries moved to damaged/
  bool locked_out = false; // another process delivers this journal right now: nothing done
  bool cut_short = false;  // the limit stopped it: calls still wait
  std::vector<std::string> problems;
  std::optional<Error> error; // the store failed: delivery stopped, the rest waits
};

// An input manifest that goes with a journaled call: its name and its
// bytes (store/manifest.hpp).
using SpooledManifest = std::pair<DigestKey, std::string>;

// A build's provenance document that goes with a call (its header's
// "provenance"), put before the call's manifests and events on delivery.
struct SpooledProvenance
{
  BuildRef build;
  std::string document;
};

// What Spool::add did.
struct Spooled
{
  std::string file;
  bool first_of_build = false; // no call of this build was spooled here before
};

class Spool
{
public:
  // The journal of the database at `url` (a URL or a store's masked
  // location: both name the same journal). Creates nothing. An error when
  // spooling is off (spool_root() is empty).
  static Expected<Spool> for_database(std::string_view url);

  // Every journal under `root` that holds something: (masked URL, directory).
  static std::vector<std::pair<std::string, std::string>> all_waiting(const std::string& root);

  const std::string&
  directory() const
  {
    return m_directory;
  }
  const std::string&
  url() const
  {
    return m_url;
  }

  // Whether a call may wait here: one stat().
  bool has_waiting() const;

  // Journals one record call (`call`: new_call_id()) with the input
  // manifests its events name, whole or not at all, durably (fsynced: it is
  // the only copy). Refused, and nothing written, when an event could not be
  // stored in a database or a manifest is not what its name says.
  // With `mark_build` false (a call journaled behind older ones, the server
  // up), the build is not marked as told: a later outage still warns it.
  Expected<Spooled> add(const std::string& call,
                        const std::vector<Event>& events,
                        const std::vector<SpooledManifest>& manifests,
                        bool mark_build = true,
                        const std::optional<SpooledProvenance>& provenance = std::nullopt) const;

  // Counts what waits (reads every entry).
  SpoolContents contents() const;

  // Delivers the waiting calls to `store`, oldest first, each with
  // Store::put_manifest for its manifests, then Store::append_call, removing an entry only once the store took it, up
  // to `limit` (then cut_short). Holds the journal's lock throughout, so two
  // deliverers never deliver at once; with `wait` false, returns at once
  // (locked_out, nothing done) when another holds it. Calls journaled
  // meanwhile are delivered too. An entry that cannot be read is moved to
  // damaged/ and reported once; one the store refuses (not a matter of
  // time: Error::unavailable false) is moved to refused/. `progress` gets
  // (done, total).
  DeliveryReport deliver(const Store& store,
                         bool wait,
                         const std::function<void(size_t, size_t)>& progress = {},
                         const DeliveryLimit& limit = {}) const;

  // Puts every call of refused/ back into calls/ (under the journal's lock,
  // waiting for it), where its number places it before the calls journaled
  // after it; returns how many.
  Expected<size_t> retry_refused() const;

  // "3 events of 2 record calls wait in DIR for delivery to URL (run: fingerprint sync)";
  // without the hint in parentheses when `hint` is false.
  static std::string waiting_note(const SpoolContents& contents, const Spool& spool, bool hint = true);

private:
  Spool(std::string directory, std::string url)
    : m_directory(std::move(directory))
    , m_url(std::move(url))
  {
  }

  std::string m_directory;
  std::string m_url; // masked
};

} // namespace fingerprint::store
