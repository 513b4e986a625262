#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>

namespace fingerprint::store {

namespace {

using json = nlohmann::json;

enum Field : size_t
{
  f_v,
  f_event,
  f_digest,
  f_size,
  f_path,
  f_project,
  f_version,
  f_target,
  f_build,
  f_build_dir,
  f_host,
  f_time,
  f_product,
  f_from,
  f_count,
  f_unknown = f_count,
};

constexpr std::array<std::string_view, f_count> k_field_names = {"v",
                                                                 "event",
                                                                 "digest",
                                                                 "size",
                                                                 "path",
                                                                 "project",
                                                                 "version",
                                                                 "target",
                                                                 "build",
                                                                 "build_dir",
                                                                 "host",
                                                                 "time",
                                                                 "product",
                                                                 "from"};

// Fills an Event from SAX callbacks. Only a flat object of strings and
// non-negative integers is accepted, so the parser never builds a tree and a
// hostile line cannot make it recurse.
class EventSax : public nlohmann::json_sax<json>
{
public:
  // `kind` receives the "event" field's text, checked after parsing.
  EventSax(Event& event, std::string& kind)
    : m_event(event)
    , m_kind(kind)
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
    if (m_field == f_v) {
      m_event.v = value > 1000 ? 1000 : static_cast<int>(value);
    } else if (m_field == f_size) {
      m_event.size = value;
    } else if (m_field != f_unknown) {
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
    if (m_field == f_v || m_field == f_size) {
      return type_error("a string");
    }
    if (m_field != f_unknown) {
      *string_field(m_field) = std::move(value);
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
    m_field = f_unknown;
    for (size_t i = 0; i < f_count; ++i) {
      if (k_field_names[i] == name) {
        m_field = static_cast<Field>(i);
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

  bool
  seen(Field field) const
  {
    return (m_seen & (1u << field)) != 0;
  }
  const std::string&
  error() const
  {
    return m_error;
  }
  bool
  depth_ok() const
  {
    return m_depth == 0;
  }

private:
  std::string*
  string_field(Field field)
  {
    switch (field) {
      case f_event:
        return &m_kind;
      case f_digest:
        return &m_event.digest;
      case f_path:
        return &m_event.path;
      case f_project:
        return &m_event.project;
      case f_version:
        return &m_event.version;
      case f_target:
        return &m_event.target;
      case f_build:
        return &m_event.build;
      case f_build_dir:
        return &m_event.build_dir;
      case f_host:
        return &m_event.host;
      case f_time:
        return &m_event.time;
      case f_product:
        return &m_event.product;
      case f_from:
        return &m_event.from;
      default:
        return nullptr;
    }
  }

  bool
  mark_seen()
  {
    if (m_depth == 0) {
      return fail("an event must be a JSON object");
    }
    if (m_field != f_unknown) {
      if (seen(m_field)) {
        return fail("field '" + m_key + "' appears twice");
      }
      m_seen |= 1u << m_field;
    }
    return true;
  }

  bool
  type_error(const char* what)
  {
    if (m_depth == 0) {
      return fail("an event must be a JSON object");
    }
    if (m_field == f_unknown) {
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

  Event& m_event;
  std::string& m_kind;
  std::string m_key;
  std::string m_error;
  Field m_field = f_unknown;
  uint32_t m_seen = 0;
  int m_depth = 0;
};

} // namespace

std::string_view
event_kind_name(EventKind kind)
{
  switch (kind) {
    case EventKind::produced:
      return "produced";
    case EventKind::consumed:
      return "consumed";
    case EventKind::installed:
      return "installed";
  }
  return "produced";
}

std::string
serialize(const Event& event)
{
  nlohmann::ordered_json object;
  object["v"] = event.v;
  object["event"] = event_kind_name(event.event);
  object["digest"] = event.digest;
  object["size"] = event.size;
  object["path"] = event.path;
  object["project"] = event.project;
  object["version"] = event.version;
  object["target"] = event.target;
  object["build"] = event.build;
  object["build_dir"] = event.build_dir;
  object["host"] = event.host;
  object["time"] = event.time;
  if (event.event == EventKind::consumed) {
    object["product"] = event.product;
  }
  if (event.event == EventKind::installed) {
    object["from"] = event.from;
  }
  return object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

// The checks every parsed event gets, whichever parser read it.
Expected<Event>
validate(Event event, const std::string& kind, bool has_product, bool has_from)
{
  if (event.v > k_event_version) {
    return Error{"event format " + std::to_string(event.v) + " is newer than this fingerprint understands ("
                 + std::to_string(k_event_version) + "); upgrade fingerprint"};
  }
  if (event.v < 1) {
    return Error{"event format 0 does not exist"};
  }
  if (kind == "produced") {
    event.event = EventKind::produced;
  } else if (kind == "consumed") {
    event.event = EventKind::consumed;
  } else if (kind == "installed") {
    event.event = EventKind::installed;
  } else {
    return Error{"unknown event kind '" + kind + "'"};
  }
  if (auto key = parse_digest_key(event.digest); !key) {
    return Error{"field 'digest': " + key.error().message};
  }
  // Queries open these (verify digests what a build tree produced): a
  // relative path would depend on where the query runs, and a NUL byte would
  // make open() see a different, shorter path.
  for (const auto& [name, value] : {std::pair{"path", &event.path}, std::pair{"build_dir", &event.build_dir}}) {
    if (!value->starts_with('/') || value->find('\0') != std::string::npos) {
      return Error{"field '" + std::string(name) + "' must be an absolute path without NUL bytes"};
    }
  }
  if (event.event == EventKind::consumed) {
    if (!has_product) {
      return Error{"missing field 'product' in a consumed event"};
    }
    if (auto key = parse_digest_key(event.product); !key) {
      return Error{"field 'product': " + key.error().message};
    }
  }
  if (event.event == EventKind::installed) {
    if (!has_from) {
      return Error{"missing field 'from' in an installed event"};
    }
    if (auto key = parse_digest_key(event.from); !key) {
      return Error{"field 'from': " + key.error().message};
    }
  }
  return event;
}

// Reads a line exactly as serialize() writes it, when every string in it is
// printable ASCII without escapes: the case of nearly every stored line.
// Anything else (another field order, white space, escapes, non-ASCII,
// unknown fields) makes it give up, and the line goes through the full JSON
// parser, which also gives the error messages. Loading a 5,000-event log
// through nlohmann's SAX interface cost as much as a full DOM parse of it
// (BM_LoadRecord vs BM_DomParseReference): its lexer is the cost.
class CanonicalReader
{
public:
  explicit CanonicalReader(std::string_view text)
    : m_rest(text)
  {
  }

  bool
  literal(std::string_view text)
  {
    if (!m_rest.starts_with(text)) {
      return false;
    }
    m_rest.remove_prefix(text.size());
    return true;
  }

  // The rest of a string whose opening quote was read, up to its closing one.
  bool
  string(std::string& out)
  {
    size_t length = 0;
    for (; length < m_rest.size(); ++length) {
      const auto c = static_cast<unsigned char>(m_rest[length]);
      if (c == '"') {
        break;
      }
      if (c < 0x20 || c >= 0x7f || c == '\\') {
        return false;
      }
    }
    if (length == m_rest.size()) {
      return false;
    }
    out.assign(m_rest.data(), length);
    m_rest.remove_prefix(length + 1);
    return true;
  }

  bool
  number(uint64_t& out)
  {
    const char* end = m_rest.data() + m_rest.size();
    if (m_rest.size() > 1 && m_rest[0] == '0' && m_rest[1] >= '0' && m_rest[1] <= '9') {
      return false; // JSON has no leading zeros
    }
    const auto [next, error] = std::from_chars(m_rest.data(), end, out);
    if (error != std::errc() || next == m_rest.data()) {
      return false;
    }
    m_rest.remove_prefix(static_cast<size_t>(next - m_rest.data()));
    return true;
  }

  bool
  at_end() const
  {
    return m_rest.empty();
  }

private:
  std::string_view m_rest;
};

bool
parse_canonical(std::string_view line, Event& event, std::string& kind, bool& has_product, bool& has_from)
{
  CanonicalReader in(line);
  uint64_t version = 0;
  const bool fields = in.literal(R"({"v":)") && in.number(version) && in.literal(R"(,"event":")") && in.string(kind)
                      && in.literal(R"(,"digest":")") && in.string(event.digest) && in.literal(R"(,"size":)")
                      && in.number(event.size) && in.literal(R"(,"path":")") && in.string(event.path)
                      && in.literal(R"(,"project":")") && in.string(event.project) && in.literal(R"(,"version":")")
                      && in.string(event.version) && in.literal(R"(,"target":")") && in.string(event.target)
                      && in.literal(R"(,"build":")") && in.string(event.build) && in.literal(R"(,"build_dir":")")
                      && in.string(event.build_dir) && in.literal(R"(,"host":")") && in.string(event.host)
                      && in.literal(R"(,"time":")") && in.string(event.time);
  if (!fields) {
    return false;
  }
  has_product = in.literal(R"(,"product":")");
  if (has_product && !in.string(event.product)) {
    return false;
  }
  has_from = !has_product && in.literal(R"(,"from":")");
  if (has_from && !in.string(event.from)) {
    return false;
  }
  if (!in.literal("}") || !in.at_end()) {
    return false;
  }
  event.v = version > 1000 ? 1000 : static_cast<int>(version);
  return true;
}

} // namespace

Expected<Event>
parse_event(std::string_view line)
{
  {
    Event event;
    std::string kind;
    bool has_product = false;
    bool has_from = false;
    if (parse_canonical(line, event, kind, has_product, has_from)) {
      return validate(std::move(event), kind, has_product, has_from);
    }
  }
  Event event;
  std::string kind;
  EventSax sax(event, kind);
  const bool parsed = json::sax_parse(line.begin(), line.end(), &sax, nlohmann::detail::input_format_t::json, true);
  if (!parsed || !sax.depth_ok()) {
    return Error{sax.error().empty() ? "not a complete JSON object" : sax.error()};
  }
  for (const Field required :
       {f_v, f_event, f_digest, f_size, f_path, f_project, f_target, f_build, f_build_dir, f_host, f_time}) {
    if (!sax.seen(required)) {
      return Error{"missing field '" + std::string(k_field_names[required]) + "'"};
    }
  }
  return validate(std::move(event), kind, sax.seen(f_product), sax.seen(f_from));
}

Expected<std::string>
serialize_for_storing(const Event& event)
{
  std::string line = serialize(event);
  if (auto parsed = parse_event(line); !parsed) {
    return Error{"event for " + event.digest + " (" + event.path + "): " + parsed.error().message};
  }
  return line;
}

} // namespace fingerprint::store
