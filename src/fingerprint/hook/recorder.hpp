#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/util/expected.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fingerprint::hook {

// A file a build step read, and how.
struct Input
{
  std::string path; // absolute
  store::Role role = store::Role::link;
  // A header deleted since its compile, or a library of the interface not
  // built (yet): when it does not exist it is left out with a warning, not
  // an error, and the rest is recorded. Found by the digest's own stat, not
  // one of the hook's beforehand (a link reads a hundred headers or more).
  bool may_be_gone = false;
};

// One build step's outputs and inputs, to be recorded.
struct RecordRequest
{
  std::string store_root;
  std::string project;
  std::string version;
  std::string target;
  std::string build_id;  // never empty: see build_id.hpp
  std::string build_dir; // absolute
  std::string config;    // the build configuration ($<CONFIG>), when the hook knows it
  std::vector<std::string> produced;
  std::vector<Input> consumed;
  digest::Algorithm algorithm = digest::k_default_algorithm;
  // A database out of reach: journal the events (store/spool.hpp) and
  // succeed. False with --required (FINGERPRINT_REQUIRED ON): the step
  // fails instead and is run again, so journaling it too would record it
  // twice.
  bool spool = true;
  // What the build tool invocation's earlier links digested
  // (digest::BuildMemo), for the files it read; null: every one is looked at.
  std::shared_ptr<digest::BuildMemo> memo;
};

// Digests every file first (through the digest cache), then stores the
// inputs as one input manifest (store/manifest.hpp; nothing when the store
// has it already) and appends one `produced` event per product, naming the
// manifest in `inputs`. One unreadable file means nothing is appended: each
// such file is passed to `on_file_error`, and the result is an error.
// Returns the number of events appended. `on_warning` hears about damaged logs met while
// appending (the events are appended regardless).
//
// With a database store, the events are one call (Store::append_call). A
// server out of reach (Error::unavailable) has them journaled in its spool
// instead, and the call succeeds; the first call of a build that does so
// warns, the others are quiet. A call that reaches the server delivers
// what waits in its spool first, oldest first, at most 50 calls or 0.2 s of
// them; when calls still wait after that (or another process is delivering
// them right now), its own call is journaled behind them, so that calls
// reach the store in the order they were made. Finding nothing there costs
// one stat().
Expected<size_t> record(const RecordRequest& request,
                        const std::function<void(const Error&)>& on_file_error,
                        const std::function<void(const std::string&)>& on_warning = {});

// The host name, as events carry it.
std::string host_name();

// Signs each of `events` (Event::signer, Event::sig) with the Ed25519 key
// in the PEM file $FINGERPRINT_SIGNING_KEY names; nothing when it is unset
// or empty. A key that cannot be read or used is an error: a build that
// asked for signed records gets none unsigned.
Expected<void> sign_events(std::vector<store::Event>& events);

} // namespace fingerprint::hook
