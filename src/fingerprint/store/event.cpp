#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <utility>

namespace fingerprint::store {

namespace {

using json = nlohmann::json;

constexpr size_t k_unknown = k_event_field_count; // a field this runner does not know
static_assert(k_event_field_count <= 32, "Reading::seen has a bit per field");
static_assert(k_event_fields[0].written == k_every_kind, "a line opens with a field every kind has");

constexpr std::array<std::string_view, 3> k_kind_names = {"produced", "consumed", "installed"};

// Which fields are FieldType::bytes ones (a bit each, as Reading::seen has),
// and each one's place among them.
constexpr uint32_t k_bytes_fields = [] {
  uint32_t bits = 0;
  for (size_t i = 0; i < k_event_field_count; ++i) {
    bits |= k_event_fields[i].type == FieldType::bytes ? 1u << i : 0u;
  }
  return bits;
}();
constexpr size_t
bytes_slot(size_t field)
{
  return static_cast<size_t>(std::popcount(k_bytes_fields & ((1u << field) - 1u)));
}

// An event being read: the kind's name until finish() knows it, and which
// fields the line had.
struct Reading
{
  Event event;
  std::string kind;
  // The FieldType::bytes fields, until finish() decodes them. A few, not one
  // per field: a Reading is made for every line read.
  std::array<std::string, std::popcount(k_bytes_fields)> escaped;
  uint32_t seen = 0;

  bool
  has(size_t field) const
  {
    return (seen & (1u << field)) != 0;
  }
};

constexpr bool
is_string(FieldType type)
{
  return type == FieldType::text || type == FieldType::kind || type == FieldType::bytes;
}

// Where the value of string field `index` goes; nullptr for a number.
std::string*
text_of(Reading& reading, size_t index)
{
  const EventField& field = k_event_fields[index];
  return field.type == FieldType::kind    ? &reading.kind
         : field.type == FieldType::text  ? &(reading.event.*field.text)
         : field.type == FieldType::bytes ? &reading.escaped[bytes_slot(index)]
                                          : nullptr;
}

// A number field's value; false for a string field.
bool
set_number(Reading& reading, const EventField& field, uint64_t value)
{
  if (field.type == FieldType::format) {
    reading.event.v = value > 1000 ? 1000 : static_cast<int>(value);
  } else if (field.type == FieldType::count) {
    reading.event.*field.count = value;
  } else {
    return false;
  }
  return true;
}

// What precedes each field's value in a line serialize() writes, a string's
// opening quote included: {"v":   ,"event":"   ,"size":   ...
struct Prefix
{
  std::array<char, 40> text{};
  size_t size = 0;
};

constexpr std::array<Prefix, k_event_field_count> k_prefixes = [] {
  std::array<Prefix, k_event_field_count> prefixes{};
  for (size_t i = 0; i < k_event_field_count; ++i) {
    Prefix& prefix = prefixes[i];
    const auto put = [&prefix](std::string_view text) {
      for (const char c : text) {
        prefix.text.at(prefix.size++) = c; // a name too long does not compile
      }
    };
    put(i == 0 ? "{\"" : ",\"");
    put(k_event_fields[i].name);
    put("\":");
    put(is_string(k_event_fields[i].type) ? "\"" : "");
  }
  return prefixes;
}();

// Fills a Reading from SAX callbacks. Only a flat object of strings and
// non-negative integers is accepted, so the parser never builds a tree and a
// hostile line cannot make it recurse.
class EventSax : public nlohmann::json_sax<json>
{
public:
  explicit EventSax(Reading& reading)
    : m_reading(reading)
  {
  }

  bool
  null() override
  {
    return type_error("null");
  }
  bool
  boolean(bool) override
  {
    return type_error("a boolean");
  }
  bool
  number_integer(number_integer_t value) override
  {
    if (value < 0) {
      return type_error("a negative number");
    }
    return number_unsigned(static_cast<number_unsigned_t>(value));
  }
  bool
  number_unsigned(number_unsigned_t value) override
  {
    if (m_field != k_unknown && !set_number(m_reading, k_event_fields[m_field], value)) {
      return type_error("a number");
    }
    return mark_seen();
  }
  bool
  number_float(number_float_t, const string_t&) override
  {
    return type_error("a fraction");
  }
  bool
  binary(binary_t&) override
  {
    return type_error("binary data");
  }
  bool
  string(string_t& value) override
  {
    if (m_field != k_unknown) {
      std::string* text = text_of(m_reading, m_field);
      if (text == nullptr) {
        return type_error("a string");
      }
      *text = std::move(value);
    }
    return mark_seen();
  }
  bool
  start_object(std::size_t) override
  {
    if (m_depth++ > 0) {
      return fail("field '" + m_key + "' must not be an object");
    }
    return true;
  }
  bool
  end_object() override
  {
    --m_depth;
    return true;
  }
  bool
  start_array(std::size_t) override
  {
    return m_depth == 0 ? fail("an event must be a JSON object") : fail("field '" + m_key + "' must not be an array");
  }
  bool
  end_array() override
  {
    return true;
  }
  bool
  key(string_t& name) override
  {
    m_key = name;
    m_field = k_unknown;
    for (size_t i = 0; i < k_event_field_count; ++i) {
      if (k_event_fields[i].name == name) {
        m_field = i;
        break;
      }
    }
    return true;
  }
  bool
  parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override
  {
    if (m_error.empty()) {
      m_error = "not valid JSON: ";
      m_error += ex.what();
    }
    return false;
  }

  // What came of sax_parse() returning `parsed`.
  Expected<void>
  outcome(bool parsed) const
  {
    if (!parsed || m_depth != 0) {
      return Error{m_error.empty() ? "not a complete JSON object" : m_error};
    }
    return {};
  }

private:
  bool
  mark_seen()
  {
    if (m_depth == 0) {
      return fail("an event must be a JSON object");
    }
    if (m_field != k_unknown) {
      if (m_reading.has(m_field)) {
        return fail("field '" + m_key + "' appears twice");
      }
      m_reading.seen |= 1u << m_field;
    }
    return true;
  }

  bool
  type_error(const char* what)
  {
    if (m_depth == 0) {
      return fail("an event must be a JSON object");
    }
    if (m_field == k_unknown) {
      return true; // fields from a newer writer are skipped, if flat
    }
    return fail("field '" + m_key + "' must not be " + what);
  }

  bool
  fail(std::string message)
  {
    if (m_error.empty()) {
      m_error = std::move(message);
    }
    return false;
  }

  Reading& m_reading;
  std::string m_key;
  std::string m_error;
  size_t m_field = k_unknown;
  int m_depth = 0;
};

// Reads a line exactly as serialize() writes it, when every string in it is
// printable ASCII without escapes: the case of nearly every stored line.
// Anything else (another field order, white space, escapes, non-ASCII,
// unknown fields) makes it give up, and the line goes through the full JSON
// parser, which also gives the error messages. Loading a 5,000-event log
// through nlohmann's SAX interface cost as much as a full DOM parse of it
// (BM_LoadRecord vs BM_DomParseReference): its lexer is the cost.
struct CanonicalReader
{
  std::string_view rest;

  bool
  literal(std::string_view text)
  {
    if (!rest.starts_with(text)) {
      return false;
    }
    rest.remove_prefix(text.size());
    return true;
  }

  // The rest of a string whose opening quote was read, up to its closing one.
  bool
  string(std::string& out)
  {
    size_t length = 0;
    for (; length < rest.size(); ++length) {
      const auto c = static_cast<unsigned char>(rest[length]);
      if (c == '"') {
        break;
      }
      if (c < 0x20 || c >= 0x7f || c == '\\') {
        return false;
      }
    }
    if (length == rest.size()) {
      return false;
    }
    out.assign(rest.data(), length);
    rest.remove_prefix(length + 1);
    return true;
  }

  bool
  number(uint64_t& out)
  {
    if (rest.size() > 1 && rest[0] == '0' && rest[1] >= '0' && rest[1] <= '9') {
      return false; // JSON has no leading zeros
    }
    const auto [next, error] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
    if (error != std::errc() || next == rest.data()) {
      return false;
    }
    rest.remove_prefix(static_cast<size_t>(next - rest.data()));
    return true;
  }

  bool
  at_end() const
  {
    return rest.empty();
  }
};

// Field `I` of a canonical line. A field every kind has must be there; one
// that only some kinds (or lines) have may be. Unrolled over the table at compile time:
// as fast as the one hand-written chain of reads it replaced.
template <size_t I>
bool
read_canonical_field(CanonicalReader& in, Reading& reading)
{
  constexpr const EventField& field = k_event_fields[I];
  if (!in.literal({k_prefixes[I].text.data(), k_prefixes[I].size})) {
    return field.written != k_every_kind || !always_written(field);
  }
  reading.seen |= 1u << I;
  if constexpr (is_string(field.type)) {
    return in.string(*text_of(reading, I));
  }
  uint64_t value = 0;
  return in.number(value) && set_number(reading, field, value);
}

template <size_t... I>
bool
read_canonical(std::string_view line, Reading& reading, std::index_sequence<I...>)
{
  CanonicalReader in{line};
  return (read_canonical_field<I>(in, reading) && ...) && in.literal("}") && in.at_end();
}

Expected<void>
check_field(const Event& event, const EventField& field)
{
  if (field.check == FieldCheck::digest) {
    if (auto key = parse_digest_key(event.*field.text); !key) {
      return Error{"field '" + std::string(field.name) + "': " + key.error().message};
    }
  } else if (field.check == FieldCheck::absolute_path) {
    const std::string& path = event.*field.text;
    if (!path.starts_with('/') || path.find('\0') != std::string::npos) {
      return Error{"field '" + std::string(field.name) + "' must be an absolute path without NUL bytes"};
    }
  }
  return {};
}

// The checks every event read gets, whichever reader read it.
Expected<Event>
finish(Reading reading)
{
  for (size_t i = 0; i < k_event_field_count; ++i) {
    if (k_event_fields[i].required == k_every_kind && !reading.has(i)) {
      return Error{"missing field '" + std::string(k_event_fields[i].name) + "'"};
    }
  }
  Event& event = reading.event;
  if (event.v > k_event_version) {
    return Error{"event format " + std::to_string(event.v) + " is newer than this fingerprint understands ("
                 + std::to_string(k_event_version) + "); upgrade fingerprint"};
  }
  if (event.v < 1) {
    return Error{"event format 0 does not exist"};
  }
  const auto kind = std::find(k_kind_names.begin(), k_kind_names.end(), reading.kind);
  if (kind == k_kind_names.end()) {
    return Error{"unknown event kind '" + reading.kind + "'"};
  }
  event.event = static_cast<EventKind>(kind - k_kind_names.begin());
  // The exact bytes replace the lossy text before that text is checked.
  for (size_t i = 0; (reading.seen & k_bytes_fields) != 0 && i < k_event_field_count; ++i) {
    const EventField& field = k_event_fields[i];
    if (field.type != FieldType::bytes || !reading.has(i) || !field.written.has(event.event)) {
      continue;
    }
    auto bytes = unescape_bytes(reading.escaped[bytes_slot(i)]);
    if (!bytes) {
      return Error{"field '" + std::string(field.name) + "': " + bytes.error().message};
    }
    event.*field.text = std::move(*bytes);
  }
  for (size_t i = 0; i < k_event_field_count; ++i) {
    const EventField& field = k_event_fields[i];
    if (!field.written.has(event.event)) {
      continue;
    }
    if (!reading.has(i)) {
      if (field.required.has(event.event)) {
        return Error{"missing field '" + std::string(field.name) + "' in a " + reading.kind + " event"};
      }
      continue;
    }
    if (auto checked = check_field(event, field); !checked) {
      return checked.error();
    }
  }
  return std::move(reading.event);
}

// The length of the well-formed UTF-8 character at the start of `text`
// (Unicode's table 3-7, which nlohmann's decoder follows too); 0 when
// there is none.
size_t
utf8_length(std::string_view text)
{
  const auto at = [&text](size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](size_t i, unsigned char low = 0x80, unsigned char high = 0xbf) {
    return i < text.size() && at(i) >= low && at(i) <= high;
  };
  const unsigned char lead = at(0);
  if (lead < 0x80) {
    return 1;
  }
  if (lead >= 0xc2 && lead <= 0xdf) {
    return continuation(1) ? 2 : 0;
  }
  if (lead >= 0xe0 && lead <= 0xef) {
    const unsigned char low = lead == 0xe0 ? 0xa0 : 0x80;  // no overlong forms
    const unsigned char high = lead == 0xed ? 0x9f : 0xbf; // no surrogates
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    const unsigned char low = lead == 0xf0 ? 0x90 : 0x80;
    const unsigned char high = lead == 0xf4 ? 0x8f : 0xbf; // nothing above U+10FFFF
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

int
hex_value(char c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : -1;
}

// The rest of a string whose opening quote is written, up to its closing one.
void
append_text(std::string& out, const std::string& text)
{
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x80 || c == '"' || c == '\\') {
      // Escapes and UTF-8 (checked, replaced when invalid) as nlohmann
      // writes them: the lines written before this fast path, byte for byte.
      const std::string quoted = json(text).dump(-1, ' ', false, json::error_handler_t::replace);
      out.append(quoted, 1);
      return;
    }
  }
  out += text;
  out += '"';
}

template <size_t I>
void
write_field(const Event& event, std::string& out)
{
  constexpr const EventField& field = k_event_fields[I];
  if (!field.written.has(event.event)) {
    return;
  }
  if constexpr (field.type == FieldType::bytes) {
    if (is_utf8(event.*field.text)) {
      return; // the text field holds it exactly
    }
  }
  if constexpr (field.optional) {
    if ((event.*field.text).empty()) {
      return;
    }
  }
  out.append(k_prefixes[I].text.data(), k_prefixes[I].size);
  char digits[24];
  if constexpr (field.type == FieldType::format) {
    out.append(digits, std::to_chars(digits, std::end(digits), event.v).ptr);
  } else if constexpr (field.type == FieldType::count) {
    out.append(digits, std::to_chars(digits, std::end(digits), event.*field.count).ptr);
  } else if constexpr (field.type == FieldType::kind) {
    out += event_kind_name(event.event);
    out += '"';
  } else if constexpr (field.type == FieldType::bytes) {
    append_text(out, escape_bytes(event.*field.text));
  } else {
    append_text(out, event.*field.text);
  }
}

template <size_t... I>
std::string
write_fields(const Event& event, std::index_sequence<I...>)
{
  std::string out;
  out.reserve(512);
  (write_field<I>(event, out), ...);
  out += '}';
  return out;
}

} // namespace

std::string_view
event_kind_name(EventKind kind)
{
  const auto index = static_cast<size_t>(kind);
  return index < k_kind_names.size() ? k_kind_names[index] : k_kind_names[0];
}

bool
is_utf8(std::string_view text)
{
  // Eight bytes at a time while they are ASCII, as nearly every path is: a
  // byte loop over the path and the build tree cost 18% of serialize().
  size_t ascii = 0;
  for (uint64_t word = 0; ascii + 8 <= text.size(); ascii += 8) {
    std::memcpy(&word, text.data() + ascii, 8);
    if ((word & 0x8080808080808080u) != 0) {
      break;
    }
  }
  for (size_t at = ascii; at < text.size();) {
    if (static_cast<unsigned char>(text[at]) < 0x80) {
      ++at;
    } else if (const size_t length = utf8_length(text.substr(at)); length != 0) {
      at += length;
    } else {
      return false;
    }
  }
  return true;
}

std::string
lossy_text(std::string_view text)
{
  if (is_utf8(text)) {
    return std::string(text);
  }
  // Through nlohmann both ways, so that this is what the line says.
  return json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

std::string
escape_bytes(std::string_view text)
{
  static constexpr char k_digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t at = 0; at < text.size();) {
    const size_t length = text[at] == '%' ? 0 : utf8_length(text.substr(at));
    if (length != 0) {
      out.append(text, at, length);
      at += length;
      continue;
    }
    const auto byte = static_cast<unsigned char>(text[at++]);
    out += '%';
    out += k_digits[byte >> 4];
    out += k_digits[byte & 0xf];
  }
  return out;
}

Expected<std::string>
unescape_bytes(std::string_view escaped)
{
  std::string out;
  out.reserve(escaped.size());
  for (size_t at = 0; at < escaped.size(); ++at) {
    if (escaped[at] != '%') {
      out += escaped[at];
      continue;
    }
    const int high = at + 2 < escaped.size() ? hex_value(escaped[at + 1]) : -1;
    const int low = at + 2 < escaped.size() ? hex_value(escaped[at + 2]) : -1;
    if (high < 0 || low < 0) {
      return Error{"'%' at byte " + std::to_string(at) + " is not followed by two hex digits"};
    }
    out += static_cast<char>(high * 16 + low);
    at += 2;
  }
  return out;
}

std::string
serialize(const Event& event)
{
  return write_fields(event, std::make_index_sequence<k_event_field_count>());
}

std::string
signed_form(const Event& event)
{
  Event unsigned_event = event;
  unsigned_event.sig.clear();
  unsigned_event.role.clear();
  return "fingerprint-event-v1\n" + serialize(unsigned_event);
}

Expected<Event>
parse_event(std::string_view line)
{
  if (Reading fast; read_canonical(line, fast, std::make_index_sequence<k_event_field_count>())) {
    return finish(std::move(fast));
  }
  Reading reading;
  EventSax sax(reading);
  const bool parsed = json::sax_parse(line.begin(), line.end(), &sax, nlohmann::detail::input_format_t::json, true);
  if (auto read = sax.outcome(parsed); !read) {
    return read.error();
  }
  return finish(std::move(reading));
}

Expected<void>
storable_in_database(const Event& event)
{
  for (const EventField& field : k_event_fields) {
    if (!field.column.empty() && field.type == FieldType::text && (event.*field.text).find('\0') != std::string::npos) {
      return Error{"event for " + event.digest + ": a NUL byte in a name cannot be stored in PostgreSQL"};
    }
  }
  return {};
}

Expected<StoredEvent>
stored_form(const Event& event)
{
  std::string line = serialize(event);
  auto parsed = parse_event(line);
  if (!parsed) {
    return Error{"event for " + event.digest + " (" + event.path + "): " + parsed.error().message};
  }
  return StoredEvent{std::move(line), std::move(*parsed)};
}

Expected<std::string>
serialize_for_storing(const Event& event)
{
  auto stored = stored_form(event);
  if (!stored) {
    return stored.error();
  }
  return std::move(stored->line);
}

} // namespace fingerprint::store
