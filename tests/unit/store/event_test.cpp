#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <random>

namespace fingerprint::store {
namespace {

const std::string k_a = "sha256:" + std::string(64, 'a');
const std::string k_b = "sha256:" + std::string(64, 'b');

Event
sample(EventKind kind)
{
  Event event;
  event.event = kind;
  event.digest = k_a;
  event.size = 123456789012;
  event.path = "/work/build/lib/libcore.so.1";
  event.project = "core";
  event.version = "1.2.3";
  event.target = "core";
  event.build = "42";
  event.build_dir = "/work/build";
  event.host = "builder-1";
  event.time = "2026-11-30T09:01:02.123Z";
  if (kind == EventKind::consumed) {
    event.product = k_b;
  }
  if (kind == EventKind::installed) {
    event.from = k_b;
  }
  return event;
}

TEST(Event, SerializeParseSerializeIsByteIdenticalForEveryKind)
{
  for (const auto kind : {EventKind::produced, EventKind::consumed, EventKind::installed}) {
    Event event = sample(kind);
    // Characters JSON must escape, and non-ASCII text.
    event.path = "/tmp/dir with \"quotes\"\\back\tslash/\xc3\xa9t\xc3\xa9\x01.so";
    const std::string once = serialize(event);
    auto parsed = parse_event(once);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(*parsed, event);
    EXPECT_EQ(serialize(*parsed), once);
    EXPECT_EQ(once.find('\n'), std::string::npos) << "one event is one line";
  }
}

TEST(Event, FieldsAreWrittenInTheDocumentedOrder)
{
  EXPECT_EQ(serialize(sample(EventKind::consumed)),
            R"({"v":1,"event":"consumed","digest":")" + k_a
              + R"(","size":123456789012,"path":"/work/build/lib/libcore.so.1","project":"core","version":"1.2.3",)"
                R"("target":"core","build":"42","build_dir":"/work/build","host":"builder-1",)"
                R"("time":"2026-11-30T09:01:02.123Z","product":")"
              + k_b + R"("})");
}

// Whether nlohmann's own decoder takes `text` as UTF-8.
bool
nlohmann_takes(const std::string& text)
{
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

// The serializer as it was before it wrote lines itself: one nlohmann
// object, dumped. Every line must stay byte for byte what it wrote; a path
// that is not UTF-8 has, after that, its exact bytes in a field of its own.
std::string
reference_serialize(const Event& event)
{
  nlohmann::ordered_json object;
  object["v"] = event.v;
  object["event"] = event_kind_name(event.event);
  object["digest"] = event.digest;
  object["size"] = event.size;
  object["path"] = event.path;
  if (!nlohmann_takes(event.path)) {
    object["path_bytes"] = escape_bytes(event.path);
  }
  object["project"] = event.project;
  object["version"] = event.version;
  object["target"] = event.target;
  object["build"] = event.build;
  object["build_dir"] = event.build_dir;
  if (!nlohmann_takes(event.build_dir)) {
    object["build_dir_bytes"] = escape_bytes(event.build_dir);
  }
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

TEST(Event, LinesAreByteForByteWhatTheNlohmannSerializerWrote)
{
  const std::vector<std::string> texts = {"",
                                          "plain text",
                                          "quote\" back\\slash",
                                          "tab\tnew\nline\r\b\f",
                                          "\x01\x1f\x7f control and DEL",
                                          "caf\xc3\xa9 \xf0\x9f\x94\xa7",
                                          "bad \xff\xfe bytes",
                                          "cut \xc3",
                                          "overlong \xc0\xaf",
                                          "surrogate \xed\xa0\x80",
                                          "mixed a\xff"
                                          "b\xc3\xa9"
                                          "c\""};
  size_t compared = 0;
  for (const auto kind : {EventKind::produced, EventKind::consumed, EventKind::installed}) {
    for (const std::string& text : texts) {
      for (std::string Event::*field : {&Event::digest,
                                        &Event::path,
                                        &Event::project,
                                        &Event::version,
                                        &Event::target,
                                        &Event::build,
                                        &Event::build_dir,
                                        &Event::host,
                                        &Event::time,
                                        &Event::product,
                                        &Event::from}) {
        Event event = sample(kind);
        event.*field = text;
        EXPECT_EQ(serialize(event), reference_serialize(event)) << "text: " << text;
        ++compared;
      }
    }
    for (const uint64_t size : {uint64_t{0}, uint64_t{7}, std::numeric_limits<uint64_t>::max()}) {
      for (const int v : {0, -1, 1, 1000000}) {
        Event event = sample(kind);
        event.size = size;
        event.v = v;
        EXPECT_EQ(serialize(event), reference_serialize(event));
      }
    }
  }
  EXPECT_EQ(compared, 3u * 11u * 11u);
}

// Each field of k_event_fields, taken out of a line of each kind: refused,
// naming it, when that kind requires it; read as the same event otherwise
// (without a path's bytes, with its text).
TEST(Event, AFieldIsRequiredExactlyForTheKindsTheTableSays)
{
  size_t refused = 0;
  size_t accepted = 0;
  for (const auto kind : {EventKind::produced, EventKind::consumed, EventKind::installed}) {
    for (const EventField& field : k_event_fields) {
      Event event = sample(kind);
      if (field.type == FieldType::bytes) {
        event.*field.text += "/\xff"; // a line has the field only then
      }
      if (field.optional) {
        event.*field.text = field.check == FieldCheck::digest          ? k_b // likewise
                            : field.check == FieldCheck::absolute_path ? "/src/a.hpp"
                                                                       : "compile";
      }
      const auto parsed = parse_event(serialize(event));
      ASSERT_TRUE(parsed) << parsed.error().message;
      nlohmann::ordered_json object = nlohmann::ordered_json::parse(serialize(event));
      ASSERT_EQ(object.contains(field.name), field.written.has(kind)) << field.name;
      if (!object.contains(field.name)) {
        continue;
      }
      object.erase(std::string(field.name));
      auto without = parse_event(object.dump());
      if (field.required.has(kind)) {
        ASSERT_FALSE(without) << "accepted without '" << field.name << "': " << object.dump();
        EXPECT_NE(without.error().message.find("missing field '" + std::string(field.name) + "'"), std::string::npos)
          << without.error().message;
        ++refused;
      } else {
        ASSERT_TRUE(without) << field.name << ": " << without.error().message;
        Event expected = event;
        if (field.type == FieldType::text) {
          expected.*field.text = "";
        } else if (field.type == FieldType::bytes) {
          expected.*field.text = lossy_text(event.*field.text);
        }
        EXPECT_EQ(*without, expected) << field.name;
        ++accepted;
      }
    }
  }
  // version is the one field any kind may lack, path_bytes and
  // build_dir_bytes are only there for a path that is not UTF-8, and a
  // consumed event's role, a produced one's inputs and build_id and an
  // installed one's source are newer than the oldest lines, and so are
  // every kind's signer and sig.
  EXPECT_EQ(accepted, 3u * 3u + 4u + 3u * 2u);
  EXPECT_EQ(refused, 3u * 11u + 2u);
}

// A path in any bytes but NUL reads back exactly, from a line that is UTF-8
// JSON whose "path" is the text with U+FFFD (what it held before "path_bytes"
// existed, and all an older reader sees).
TEST(Event, PathsThatAreNotUtf8ReadBackByteForByte)
{
  std::vector<std::string> names = {"/tmp/\xff\xfe",
                                    "/b/lib\xff.a",
                                    "/b/dir\xe9/x.o",
                                    "/100%\xff",
                                    "/%25%FF\x80",
                                    "/cut \xc3",
                                    "/overlong \xc0\xaf",
                                    "/surrogate \xed\xa0\x80",
                                    "/above U+10FFFF \xf4\x90\x80\x80",
                                    "/caf\xc3\xa9 \xf0\x9f\x94\xa7 \xff \"quoted\" \\ \t\x01"};
  for (int byte = 1; byte < 256; ++byte) {
    names.push_back("/x" + std::string(1, static_cast<char>(byte)) + "y");
  }
  std::mt19937 random(13); // the same names on every run
  for (int i = 0; i < 2000; ++i) {
    std::string name = "/";
    for (size_t n = random() % 12; n > 0; --n) {
      name += static_cast<char>(1 + random() % 255);
    }
    names.push_back(name);
  }
  size_t with_bytes = 0;
  for (const std::string& name : names) {
    for (const auto kind : {EventKind::produced, EventKind::consumed, EventKind::installed}) {
      Event event = sample(kind);
      event.path = name;
      event.build_dir = name;
      const std::string line = serialize(event);
      auto parsed = parse_event(line);
      ASSERT_TRUE(parsed) << parsed.error().message << ": " << line;
      EXPECT_EQ(*parsed, event) << line;
      EXPECT_EQ(serialize(*parsed), line);
      ASSERT_TRUE(nlohmann_takes(line)) << "the line itself is UTF-8";
      const auto object = nlohmann::json::parse(line);
      EXPECT_EQ(object["path"], lossy_text(name));
      EXPECT_EQ(object.contains("path_bytes"), !is_utf8(name)) << line;
      EXPECT_EQ(object.contains("build_dir_bytes"), !is_utf8(name)) << line;
      with_bytes += object.contains("path_bytes") ? 1 : 0;
    }
  }
  EXPECT_GT(with_bytes, 3u * 2000u / 2) << "most random names are not UTF-8";

  // An older reader skips the field: it reads the text, as it always did.
  Event event = sample(EventKind::produced);
  event.path = "/tmp/\xff\xfe";
  nlohmann::ordered_json object = nlohmann::ordered_json::parse(serialize(event));
  EXPECT_EQ(object["path_bytes"], "/tmp/%FF%FE");
  object.erase("path_bytes");
  auto old = parse_event(object.dump());
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->path, "/tmp/\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(Event, BytesAreEscapedWherePercentDecodingGivesThemBack)
{
  EXPECT_EQ(escape_bytes("/b/lib\xff.a"), "/b/lib%FF.a");
  EXPECT_EQ(escape_bytes("/b/dir\xe9/x.o"), "/b/dir%E9/x.o");
  EXPECT_EQ(escape_bytes("100% \xff"), "100%25 %FF");
  EXPECT_EQ(escape_bytes("caf\xc3\xa9 \xf0\x9f\x94\xa7"), "caf\xc3\xa9 \xf0\x9f\x94\xa7") << "UTF-8 is kept";
  EXPECT_EQ(escape_bytes("\xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xc3"), "%C0%AF %ED%A0%80 %F4%90%80%80 %C3");
  EXPECT_EQ(escape_bytes("\xe2\x82\xac\xe2\x82"), "\xe2\x82\xac%E2%82") << "a cut character after a whole one";
  auto decoded = unescape_bytes("%ff%FF%25x");
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, "\xff\xff%x");
  for (const std::string bad : {"%", "%F", "a%GG", "%2", "x%%41"}) {
    auto refused = unescape_bytes(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("two hex digits"), std::string::npos) << refused.error().message;
  }
  // Each character valid UTF-8 is where nlohmann's decoder says it is: every
  // string of one and two bytes, and many of three and four.
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    ASSERT_EQ(is_utf8(one), nlohmann_takes(one)) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two = one + static_cast<char>(b);
      ASSERT_EQ(is_utf8(two), nlohmann_takes(two)) << a << " " << b;
    }
  }
  std::mt19937 random(7);
  for (int i = 0; i < 50000; ++i) {
    std::string text;
    for (size_t n = 3 + random() % 2; n > 0; --n) {
      // Mostly lead and continuation bytes, where the rules are.
      text += static_cast<char>(random() % 4 == 0 ? random() % 256 : 0x80 + random() % 0x78);
    }
    ASSERT_EQ(is_utf8(text), nlohmann_takes(text)) << escape_bytes(text);
  }
}

void
expect_refused(const std::string& line, const std::string& reason)
{
  auto parsed = parse_event(line);
  ASSERT_FALSE(parsed) << "accepted: " << line;
  EXPECT_NE(parsed.error().message.find(reason), std::string::npos) << parsed.error().message;
}

std::string
replace(std::string text, const std::string& from, const std::string& to)
{
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Event, MalformedLinesAreRefusedWithAReason)
{
  const std::string good = serialize(sample(EventKind::consumed));
  ASSERT_TRUE(parse_event(good));
  expect_refused("", "not valid JSON");
  expect_refused(good.substr(0, good.size() / 2), "not valid JSON");
  expect_refused(good + "x", "not valid JSON");
  expect_refused("[1,2]", "must be a JSON object");
  expect_refused("\"text\"", "must be a JSON object");
  expect_refused(replace(good, R"("size":123456789012)", R"("size":"12")"), "field 'size' must not be a string");
  expect_refused(replace(good, R"("size":123456789012)", R"("size":-1)"), "negative");
  expect_refused(replace(good, R"("size":123456789012)", R"("size":1.5)"), "fraction");
  expect_refused(replace(good, R"("host":"builder-1")", R"("host":{"a":1})"), "field 'host' must not be an object");
  expect_refused(replace(good, R"("host":"builder-1")", R"("host":[1])"), "field 'host' must not be an array");
  expect_refused(replace(good, R"("host":"builder-1")", R"("host":null)"), "field 'host' must not be null");
  expect_refused(replace(good, R"("host":"builder-1",)", ""), "missing field 'host'");
  expect_refused(replace(good, R"("event":"consumed")", R"("event":"stolen")"), "unknown event kind 'stolen'");
  expect_refused(replace(good, k_a, "sha256:abc"), "field 'digest'");
  expect_refused(replace(good, k_a, "sha256:../../etc/passwd"), "field 'digest'");
  expect_refused(replace(good, k_b, "sha256:" + std::string(64, 'A')), "field 'product'");
  expect_refused(replace(good, R"(,"product":")" + k_b + "\"", ""), "missing field 'product'");
  expect_refused(replace(good, R"("v":1)", R"("v":2)"), "newer than this fingerprint understands");
  expect_refused(replace(good, R"("project":"core")", R"("project":"core","project":"x")"), "appears twice");
  expect_refused(std::string(10000, '[') + std::string(10000, ']'), "must be a JSON object");
  // Paths are opened by queries: absolute, and no NUL to cut them short.
  expect_refused(replace(good, R"("path":"/work/build/)", R"("path":")"), "field 'path' must be an absolute path");
  expect_refused(replace(good, R"("path":"/work/build/lib)", R"("path":"/etc/passwd\u0000/lib)"),
                 "field 'path' must be an absolute path without NUL");
  expect_refused(replace(good, R"("build_dir":"/work/build")", R"("build_dir":"")"), "field 'build_dir'");
}

// Stored lines go through a fast reader of exactly what serialize() writes;
// any other spelling of the same event goes through the JSON parser. Both
// must give the same event.
TEST(Event, TheCanonicalFastPathAndTheJsonParserAgree)
{
  for (const auto kind : {EventKind::produced, EventKind::consumed, EventKind::installed}) {
    const Event event = sample(kind);
    const std::string line = serialize(event);
    // White space between tokens is not canonical: the JSON parser reads it.
    std::string spaced;
    for (size_t i = 0; i < line.size(); ++i) {
      spaced += line[i];
      if (line[i] == ',' || (line[i] == ':' && line[i - 1] == '"')) {
        spaced += ' ';
      }
    }
    auto fast = parse_event(line);
    auto full = parse_event(spaced);
    ASSERT_TRUE(fast && full) << (fast ? full.error().message : fast.error().message);
    EXPECT_EQ(*fast, event);
    EXPECT_EQ(*full, event);
  }
  // What the fast reader gives up on is still read correctly, or refused.
  Event escaped = sample(EventKind::produced);
  escaped.path = "/tmp/a\"b\\c\u00e9";
  auto parsed = parse_event(serialize(escaped));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->path, escaped.path);
  expect_refused(replace(serialize(sample(EventKind::produced)), R"("size":123456789012)", R"("size":0123)"),
                 "not valid JSON");
  expect_refused(replace(serialize(sample(EventKind::produced)), R"("v":1)", R"("v":99999999999999999999999)"),
                 "must not be a fraction");
}

TEST(Event, FlatFieldsFromANewerWriterAreSkipped)
{
  const std::string good = serialize(sample(EventKind::produced));
  auto parsed = parse_event(replace(good, R"("v":1,)", R"("v":1,"compiler":"gcc","level":3,)"));
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, sample(EventKind::produced));
}

TEST(Event, APathsBytesFieldThatDoesNotDecodeToAPathIsRefused)
{
  Event event = sample(EventKind::produced);
  event.path = "/b/lib\xff.a";
  const std::string good = serialize(event);
  ASSERT_TRUE(parse_event(good));
  expect_refused(replace(good, "lib%FF.a", "lib%F.a"),
                 "field 'path_bytes': '%' at byte 6 is not followed by two hex digits");
  expect_refused(replace(good, R"("path_bytes":"/b/)", R"("path_bytes":")"), "field 'path' must be an absolute path");
  expect_refused(replace(good, "lib%FF.a", "lib%00.a"), "field 'path' must be an absolute path without NUL");
  expect_refused(replace(good, R"("path_bytes":"/b/lib%FF.a")", R"("path_bytes":7)"),
                 "field 'path_bytes' must not be a number");
  expect_refused(replace(good, R"("path_bytes":"/b/lib%FF.a")", R"("path_bytes":"/a","path_bytes":"/b")"),
                 "appears twice");
}

TEST(DigestKey, OnlyAlgorithmColonExactLowercaseHexIsAccepted)
{
  auto key = parse_digest_key("sha256:" + std::string(64, 'a'));
  ASSERT_TRUE(key);
  EXPECT_EQ(key->log_path(), "objects/sha256/aa/" + std::string(64, 'a') + ".jsonl");
  EXPECT_TRUE(parse_digest_key("md5:" + std::string(32, '0')));
  EXPECT_FALSE(parse_digest_key("sha256:" + std::string(63, 'a')));
  EXPECT_FALSE(parse_digest_key("sha256:" + std::string(65, 'a')));
  EXPECT_FALSE(parse_digest_key("sha256:" + std::string(64, 'A')));
  EXPECT_FALSE(parse_digest_key("sha256:" + std::string(62, 'a') + "/."));
  EXPECT_FALSE(parse_digest_key("md5:" + std::string(64, 'a')));
  EXPECT_FALSE(parse_digest_key("md9:" + std::string(64, 'a')));
  EXPECT_FALSE(parse_digest_key(std::string(64, 'a')));

  EXPECT_TRUE(looks_like_digest_key("sha256:abc"));
  EXPECT_TRUE(looks_like_digest_key("sha256:../x"));
  EXPECT_FALSE(looks_like_digest_key("./sha256:abc"));
  EXPECT_FALSE(looks_like_digest_key("lib/libfoo.so"));
  EXPECT_FALSE(looks_like_digest_key(":abc"));
}

} // namespace
} // namespace fingerprint::store
