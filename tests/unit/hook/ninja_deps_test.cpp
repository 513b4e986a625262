#include <fingerprint/hook/ninja_deps.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <cstdio>
#include <cstring>
#include <memory>

namespace fingerprint::hook {
namespace {

using Paths = std::vector<std::string>;

// Writes a deps log as Ninja 1.11 does (deps_log.cc): the records in the
// order given, ids assigned to paths as they come.
class LogWriter
{
public:
  LogWriter()
  {
    m_bytes = "# ninjadeps\n";
    word(4);
  }

  uint32_t
  path(const std::string& name)
  {
    const size_t padding = (4 - name.size() % 4) % 4;
    word(static_cast<uint32_t>(name.size() + padding + 4));
    m_bytes += name;
    m_bytes.append(padding, '\0');
    word(~m_next);
    return m_next++;
  }

  void
  deps(uint32_t output, const std::vector<uint32_t>& inputs)
  {
    word(0x8000'0000U | static_cast<uint32_t>(12 + 4 * inputs.size()));
    word(output);
    word(0x1234'5678); // the mtime, low and high words
    word(0x9);
    for (const uint32_t input : inputs) {
      word(input);
    }
  }

  void
  word(uint32_t value)
  {
    char raw[4];
    std::memcpy(raw, &value, 4);
    m_bytes.append(raw, 4);
  }

  std::string m_bytes;

private:
  uint32_t m_next = 0;
};

TEST(NinjaDeps, InputsOfEachOutputAndTheLastRecordWins)
{
  LogWriter w;
  const auto object = w.path("CMakeFiles/t.dir/t.cpp.o"); // 24 bytes: no padding
  const auto source = w.path("/src/t.cpp");               // 10: padded to 12
  const auto header = w.path("/usr/include/stdio.h");
  w.deps(object, {source});
  const auto other = w.path("o.o");
  w.deps(other, {header, source});
  w.deps(object, {source, header}); // rebuilt: the new list replaces the old
  auto log = NinjaDepsLog::parse(w.m_bytes);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->path_count(), 4u);
  EXPECT_EQ(log->output_count(), 2u);
  EXPECT_EQ(log->inputs_of("CMakeFiles/t.dir/t.cpp.o"), (Paths{"/src/t.cpp", "/usr/include/stdio.h"}));
  EXPECT_EQ(log->inputs_of("o.o"), (Paths{"/usr/include/stdio.h", "/src/t.cpp"}));
  EXPECT_TRUE(log->inputs_of("/src/t.cpp").empty()); // a path without deps
  EXPECT_TRUE(log->inputs_of("nowhere.o").empty());
  // The views into the bytes survive moving the log.
  auto moved = std::make_unique<NinjaDepsLog>(std::move(*log));
  EXPECT_EQ(moved->inputs_of("o.o"), (Paths{"/usr/include/stdio.h", "/src/t.cpp"}));
}

TEST(NinjaDeps, ATornTailEndsTheLogWhereNinjaWouldStop)
{
  LogWriter w;
  const auto object = w.path("a.o");
  const auto source = w.path("a.c");
  w.deps(object, {source});
  const std::string whole = w.m_bytes;
  const auto header = w.path("h.h");
  w.deps(object, {source, header});
  // Every cut inside the last two records leaves the first deps record.
  for (size_t cut = whole.size(); cut < w.m_bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    auto log = NinjaDepsLog::parse(w.m_bytes.substr(0, cut));
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_EQ(log->inputs_of("a.o"), (Paths{"a.c"}));
  }
  auto log = NinjaDepsLog::parse(w.m_bytes);
  ASSERT_TRUE(log);
  EXPECT_EQ(log->inputs_of("a.o"), (Paths{"a.c", "h.h"}));
}

// What the recorder does with a build's log: read it once, then only what
// Ninja appended, wherever the last read ended (inside a record too).
TEST(NinjaDeps, ReadingOnFromAnyCutGivesWhatReadingTheWholeGives)
{
  LogWriter w;
  const auto object = w.path("a.o");
  const auto source = w.path("a.c");
  w.deps(object, {source});
  const size_t first = w.m_bytes.size();
  const auto header = w.path("h.h");
  const auto other = w.path("b.o");
  w.deps(other, {header});
  w.deps(object, {source, header});
  for (size_t cut = first; cut <= w.m_bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    auto log = NinjaDepsLog::parse(w.m_bytes.substr(0, cut));
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_LE(log->consumed(), cut);
    log->extend(w.m_bytes.substr(log->consumed()));
    EXPECT_EQ(log->consumed(), w.m_bytes.size());
    EXPECT_EQ(log->inputs_of("a.o"), (Paths{"a.c", "h.h"}));
    EXPECT_EQ(log->inputs_of("b.o"), (Paths{"h.h"}));
    EXPECT_EQ(log->path_count(), 4u);
  }
  // Damage ends the log for good: what comes after it is not read.
  auto log = NinjaDepsLog::parse(w.m_bytes.substr(0, first));
  ASSERT_TRUE(log);
  std::string damaged = w.m_bytes.substr(first);
  damaged[8] ^= 0x40; // h.h's checksum
  log->extend(damaged);
  const size_t after_damage = log->consumed();
  EXPECT_EQ(after_damage, first);
  log->extend(w.m_bytes.substr(first));
  EXPECT_EQ(log->consumed(), after_damage);
  EXPECT_EQ(log->inputs_of("a.o"), (Paths{"a.c"}));
}

TEST(NinjaDeps, BadChecksumsAndUnknownIdsEndTheLog)
{
  LogWriter w;
  const auto object = w.path("a.o");
  const auto source = w.path("a.c");
  w.deps(object, {source});
  const size_t good = w.m_bytes.size();
  w.path("b.c");
  w.m_bytes[w.m_bytes.size() - 1] ^= 1; // the checksum of "b.c"
  w.deps(object, {});
  auto log = NinjaDepsLog::parse(w.m_bytes);
  ASSERT_TRUE(log);
  EXPECT_EQ(log->path_count(), 2u);
  EXPECT_EQ(log->inputs_of("a.o"), (Paths{"a.c"}));

  LogWriter u;
  u.m_bytes = w.m_bytes.substr(0, good);
  u.deps(object, {7}); // an id no path record gave
  log = NinjaDepsLog::parse(u.m_bytes);
  ASSERT_TRUE(log);
  EXPECT_EQ(log->inputs_of("a.o"), (Paths{"a.c"}));
}

TEST(NinjaDeps, WrongHeaderOrVersionIsAnError)
{
  auto log = NinjaDepsLog::parse("# ninjalog v5\n");
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().message.find("not a Ninja deps log"), std::string::npos);
  LogWriter w;
  w.m_bytes[12] = 3; // version 3: 4-byte mtimes, Ninja before 1.10
  log = NinjaDepsLog::parse(w.m_bytes);
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().message.find("version 3"), std::string::npos) << log.error().message;
  test::TempDir dir;
  auto missing = NinjaDepsLog::read(dir / "none");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find(dir / "none"), std::string::npos);
}

// A log Ninja itself wrote, read back as `ninja -t deps` reads it.
TEST(NinjaDeps, ReadsWhatNinjaWrote)
{
  test::TempDir dir;
  test::write_file(dir / "a.h", "");
  test::write_file(dir / "sp ace.h", "");
  test::write_file(
    dir / "build.ninja",
    "rule cc\n"
    "  command = printf 'out.o: in.c a.h sp\\\\ ace.h \\\\\\n %s/abs.h\\n' \"$$PWD\" > out.d && touch out.o\n"
    "  depfile = out.d\n"
    "  deps = gcc\n"
    "build out.o: cc in.c\n");
  test::write_file(dir / "in.c", "");
  test::write_file(dir / "abs.h", "");
  const std::string command = "cd '" + std::string(dir.path()) + "' && ninja >/dev/null 2>&1 && test ! -e out.d";
  ASSERT_EQ(std::system(command.c_str()), 0) << "ninja did not build and take the depfile";
  auto log = NinjaDepsLog::read(dir / ".ninja_deps");
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(log->inputs_of("out.o"), (Paths{"in.c", "a.h", "sp ace.h", dir / "abs.h"}));
}

} // namespace
} // namespace fingerprint::hook
