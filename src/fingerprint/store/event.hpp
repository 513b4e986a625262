#pragma once

#include <fingerprint/util/expected.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace fingerprint::store {

// The event format version written in each line's "v".
inline constexpr int k_event_version = 1;

enum class EventKind
{
  produced,
  consumed,
  installed
};

std::string_view event_kind_name(EventKind kind);

// One line of an artifact's log (DESIGN.md section 4). Field order here is
// the order on disk, so serialize(parse(line)) == line for every line we
// write.
struct Event
{
  int v = k_event_version;
  EventKind event = EventKind::produced;
  std::string digest; // "sha256:<hex>" of the artifact whose log holds this
  uint64_t size = 0;
  std::string path;
  std::string project;
  std::string version;
  std::string target;
  std::string build;
  std::string build_dir;
  std::string host;
  std::string time;    // RFC 3339 UTC
  std::string product; // consumed: the digest of what the consumer produced
  std::string from;    // installed: the build-tree digest it was installed from

  bool operator==(const Event&) const = default;
};

// One JSON object, no trailing newline. Paths that are not valid UTF-8 have
// the offending bytes replaced by U+FFFD (JSON cannot carry raw bytes).
std::string serialize(const Event& event);

// The line to store for a new event: serialize(event), refused when it
// would not read back (a relative path, an invalid digest, a missing
// product...), so that no store ever holds a line it cannot read. The error
// names the event's artifact and path.
Expected<std::string> serialize_for_storing(const Event& event);

// Parses one line (without its newline) straight into an Event (SAX, no DOM).
// Refuses nesting, unknown event kinds, invalid digests, missing fields and
// formats newer than k_event_version; the error says which.
Expected<Event> parse_event(std::string_view line);

} // namespace fingerprint::store
