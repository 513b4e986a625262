#pragma once

#include <fingerprint/util/expected.hpp>

#include <cstdint>
#include <iterator>
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

// One line of an artifact's log (README, "The store"). The order on disk is
// that of k_event_fields below, so serialize(parse(line)) == line for every
// line we write. Paths hold the exact bytes of the file's name, UTF-8 or
// not: they are what queries open and compare (see FieldType::bytes).
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
  // consumed, as queries report an input manifest's entry (never stored:
  // old logs' consumed events have none, and were link edges or declared).
  std::string role;
  std::string inputs;   // produced: the digest of its input manifest (manifest.hpp), if it has one
  std::string source;   // installed: the source or build-tree file it is a copy of, when known
  std::string build_id; // produced: an ELF file's GNU build-id (hex), when it has one
  // Signed records (README, "Signed records"): the Ed25519 public key that
  // signed the event (base64 of its 32 bytes) and the signature (base64 of
  // 64), over signed_form(). Empty: unsigned.
  std::string signer;
  std::string sig;
  // Never stored: the stored line of the produced event a consumed event
  // was read from (its input manifest's entry), whose signature vouches for
  // it. Not part of what the event is: two events compare equal whatever
  // their vouchers.
  struct Voucher
  {
    std::string line;
    bool
    operator==(const Voucher&) const
    {
      return true;
    }
  };
  Voucher vouched_by;

  bool operator==(const Event&) const = default;
};

// A set of event kinds.
struct EventKinds
{
  unsigned bits = 0;

  constexpr bool
  has(EventKind kind) const
  {
    return ((bits >> static_cast<unsigned>(kind)) & 1u) != 0;
  }
  bool operator==(const EventKinds&) const = default;
};

inline constexpr EventKinds k_every_kind{0b111};
inline constexpr EventKinds k_no_kind{0};

constexpr EventKinds
only(EventKind kind)
{
  return {1u << static_cast<unsigned>(kind)};
}

// How a field's value is held in an Event and spelled in a line.
enum class FieldType
{
  format, // Event::v, a number
  kind,   // Event::event, its name as a string
  count,  // a non-negative number: `count`
  text,   // a string: `text`
  // The exact bytes of the text field `text` names, written right after it
  // and only when they are not UTF-8, which a JSON string cannot carry: that
  // field then holds the text with U+FFFD for each invalid sequence (for
  // people, and for readers older than this field, which skip it), and this
  // one the bytes, escaped (escape_bytes). A reader that finds it takes the
  // bytes from it. Lines of UTF-8 names are as they always were.
  bytes,
};

// What a field must hold, checked on every event read, for the kinds that
// carry it.
enum class FieldCheck
{
  none,
  digest,        // a digest key ("sha256:<hex>")
  absolute_path, // queries open it: a relative path would depend on where they run, a NUL cut it short
};

// One field of an event line.
struct EventField
{
  std::string_view name;
  FieldType type = FieldType::text;
  std::string Event::*text = nullptr; // FieldType::text, and the field FieldType::bytes is of
  uint64_t Event::*count = nullptr;   // FieldType::count
  EventKinds written = k_every_kind;  // the kinds whose lines have it
  EventKinds required = k_every_kind; // the kinds a line is refused without it (older writers lacked the rest)
  FieldCheck check = FieldCheck::none;
  // Written only when not empty: a field newer lines have and older ones
  // lack, so that those read back byte for byte.
  bool optional = false;
  // The PostgreSQL column that holds it beside the line, for the queries;
  // empty: only in the line. Its SQL type follows `type` (postgresql/schema.hpp).
  std::string_view column = {};
};

// Every field, in the order serialize() writes them. This table alone drives
// the serializer, both readers of a line, the checks of what was read and the
// PostgreSQL store's columns: a new field is one line here (and, when it has
// a column, a new step in postgresql/schema.cpp's k_migrations, which the
// conformance tests hold to this table).
inline constexpr EventField k_event_fields[] = {
  {.name = "v", .type = FieldType::format},
  {.name = "event", .type = FieldType::kind, .column = "kind"},
  {.name = "digest", .text = &Event::digest, .check = FieldCheck::digest, .column = "digest"},
  {.name = "size", .type = FieldType::count, .count = &Event::size},
  {.name = "path", .text = &Event::path, .check = FieldCheck::absolute_path},
  {.name = "path_bytes", .type = FieldType::bytes, .text = &Event::path, .required = k_no_kind},
  {.name = "project", .text = &Event::project, .column = "project"},
  {.name = "version", .text = &Event::version, .required = k_no_kind},
  {.name = "target", .text = &Event::target},
  {.name = "build", .text = &Event::build, .column = "build"},
  {.name = "build_dir", .text = &Event::build_dir, .check = FieldCheck::absolute_path},
  {.name = "build_dir_bytes", .type = FieldType::bytes, .text = &Event::build_dir, .required = k_no_kind},
  {.name = "host", .text = &Event::host},
  {.name = "time", .text = &Event::time},
  {.name = "product",
   .text = &Event::product,
   .written = only(EventKind::consumed),
   .required = only(EventKind::consumed),
   .check = FieldCheck::digest,
   .column = "product"},
  {.name = "from",
   .text = &Event::from,
   .written = only(EventKind::installed),
   .required = only(EventKind::installed),
   .check = FieldCheck::digest,
   .column = "from_digest"},
  {.name = "role", .text = &Event::role, .written = only(EventKind::consumed), .required = k_no_kind, .optional = true},
  {.name = "inputs",
   .text = &Event::inputs,
   .written = only(EventKind::produced),
   .required = k_no_kind,
   .check = FieldCheck::digest,
   .optional = true,
   .column = "inputs"},
  {.name = "source",
   .text = &Event::source,
   .written = only(EventKind::installed),
   .required = k_no_kind,
   .check = FieldCheck::absolute_path,
   .optional = true},
  {.name = "build_id",
   .text = &Event::build_id,
   .written = only(EventKind::produced),
   .required = k_no_kind,
   .optional = true},
  // Last, so that a signed line is its signed form with these two added.
  {.name = "signer", .text = &Event::signer, .required = k_no_kind, .optional = true},
  {.name = "sig", .text = &Event::sig, .required = k_no_kind, .optional = true},
};
inline constexpr size_t k_event_field_count = std::size(k_event_fields);

// Whether a line holds the field in every event of the kinds it is written
// for; else only in some (a FieldType::bytes field).
constexpr bool
always_written(const EventField& field)
{
  return field.type != FieldType::bytes && !field.optional;
}

// What an event's signature is over: "fingerprint-event-v1\n" and the
// event's line with its `signer` and no `sig`.
std::string signed_form(const Event& event);

// One JSON object, no trailing newline. A path that is not valid UTF-8 is
// written twice: with U+FFFD for each invalid sequence in its own field, and
// exactly in its FieldType::bytes field. Other text that is not UTF-8 (a
// project's name) has U+FFFD only.
std::string serialize(const Event& event);

// Whether `text` is well-formed UTF-8 (Unicode's table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF), which JSON carries as is.
bool is_utf8(std::string_view text);

// `text` for people and JSON: as it is when UTF-8, else with U+FFFD for each
// invalid sequence, exactly as a line's text fields spell it.
std::string lossy_text(std::string_view text);

// The escaped form a FieldType::bytes field holds: the bytes of `text`, with
// '%' and each byte that is not part of a well-formed UTF-8 character
// written %XX (uppercase hex), e.g. "/b/lib%FF.a". Plain RFC 3986
// percent-decoding (Python's urllib.parse.unquote_to_bytes) gives the bytes
// back, and the name stays readable where it is UTF-8.
std::string escape_bytes(std::string_view text);

// The bytes escape_bytes() escaped; an error for a '%' not followed by two
// hex digits.
Expected<std::string> unescape_bytes(std::string_view escaped);

// An event as a store keeps it: its line, and the event as it reads back
// from that line (paths exactly; other text that was not UTF-8 with U+FFFD,
// as the line has it).
struct StoredEvent
{
  std::string line;
  Event event;
};

// The line to store for a new event: serialize(event), refused when it
// would not read back (a relative path, an invalid digest, a missing
// product...), so that no store ever holds a line it cannot read. The error
// names the event's artifact and path.
Expected<StoredEvent> stored_form(const Event& event);

// Whether a database can store `event`: its text columns (k_event_fields'
// `column`) hold no NUL byte. The spool asks before journaling a call, the
// PostgreSQL store before inserting it.
Expected<void> storable_in_database(const Event& event);
Expected<std::string> serialize_for_storing(const Event& event);

// Parses one line (without its newline) straight into an Event (SAX, no DOM).
// Refuses nesting, unknown event kinds, invalid digests, missing fields and
// formats newer than k_event_version; the error says which.
Expected<Event> parse_event(std::string_view line);

} // namespace fingerprint::store
