#include <fingerprint/hook/link_inputs.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <filesystem>
#include <sys/stat.h>

namespace fingerprint::hook {
namespace {

using Paths = std::vector<std::string>;

TEST(LinkInputs, GnuLdWritesOnePathPerLineWithSpacesUnescaped)
{
  // As GNU ld 2.40 writes it for `gcc mm.c "sp ace/libf.a" -Wl,--dependency-file=...`.
  const std::string text = "mm: \\\n"
                           "  /usr/lib/x86_64-linux-gnu/Scrt1.o \\\n"
                           "  sp ace/libf.a \\\n"
                           "  /usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a\n"
                           "\n"
                           "/usr/lib/x86_64-linux-gnu/Scrt1.o:\n"
                           "\n"
                           "sp ace/libf.a:\n";
  EXPECT_EQ(parse_depfile(text),
            (Paths{"/usr/lib/x86_64-linux-gnu/Scrt1.o", "sp ace/libf.a", "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a"}));
}

TEST(LinkInputs, EscapedSpellingsAndInputsOnTheRuleLine)
{
  EXPECT_EQ(parse_depfile("out: a.o b\\ c.a \\\n  d\\ e.so \\\n  cost$$.a\n"),
            (Paths{"a.o", "b c.a", "d e.so", "cost$.a"}));
  EXPECT_EQ(parse_depfile("out:\n"), Paths{});
  EXPECT_EQ(parse_depfile(""), Paths{});
}

TEST(LinkInputs, OnlyTheFirstRuleIsReadNotThePhonyRulesAfterIt)
{
  // As GNU ld 2.40 writes it for an archive named "odd/x: y.a": its phony
  // rule, unescaped, looks like a rule with the input "y.a:".
  const std::string text = "app: \\\n"
                           "  m.o \\\n"
                           "  odd/x: y.a\n"
                           "\n"
                           "m.o:\n"
                           "\n"
                           "odd/x: y.a:\n";
  EXPECT_EQ(parse_depfile(text), (Paths{"m.o", "odd/x: y.a"}));
  EXPECT_EQ(parse_depfile("\nout: a.o b.a\nc.a: d.a\n"), (Paths{"a.o", "b.a"}));
}

TEST(LinkInputs, AnEscapedSpaceAtTheEndOfANameIsKept)
{
  // As lld 14 writes it for an archive named "odd/end ".
  EXPECT_EQ(parse_depfile("app: \\\n m.o \\\n odd/end\\  \\\n /lib/libc.so.6\n\nodd/end\\ :\n"),
            (Paths{"m.o", "odd/end ", "/lib/libc.so.6"}));
  EXPECT_EQ(parse_depfile("app: \\\n odd/end\\ \n"), (Paths{"odd/end "}));
  // A backslash that ends the rule's line is kept with its word.
  EXPECT_EQ(parse_depfile("app: a.o b\\\\\\\n"), (Paths{"a.o", "b\\\\\\"}));
}

TEST(LinkInputs, TheLinkLineGivesLibrariesWhenThereIsNoDependencyFile)
{
  // Existing files only: the command names them relative to the build tree.
  const std::vector<std::string> command = {
    "/usr/bin/c++", "main.o", "-o", "app", "/lib/x86_64-linux-gnu/libc.so.6", "-lm", "/nonexistent/libz.a"};
  EXPECT_EQ(collect_link_inputs(
              command, "", "/b/app", "/b", true, [](const std::string& warning) { ADD_FAILURE() << warning; }),
            Paths{"/lib/x86_64-linux-gnu/libc.so.6"});
}

TEST(LinkInputs, ADependencyFileThatIsNotARegularFileIsRefusedAndTheLinkLineRead)
{
  // A directory used to throw out of the iostream ("basic_filebuf::underflow")
  // and fail the build step; a FIFO blocked the open forever.
  const test::TempDir dir;
  const std::string depfile = dir / "app.d";
  const std::vector<std::string> command = {"/usr/bin/c++", "main.o", "-o", "app", "/lib/x86_64-linux-gnu/libc.so.6"};
  for (const auto& [kind, reason] : {std::pair{"directory", "is a directory"}, {"FIFO", "not a regular file"}}) {
    SCOPED_TRACE(kind);
    ASSERT_EQ(std::string(kind) == "FIFO" ? ::mkfifo(depfile.c_str(), 0600) : ::mkdir(depfile.c_str(), 0700), 0);
    Paths warnings;
    EXPECT_EQ(collect_link_inputs(
                command, depfile, "/b/app", "/b", true, [&](const std::string& text) { warnings.push_back(text); }),
              Paths{"/lib/x86_64-linux-gnu/libc.so.6"});
    ASSERT_EQ(warnings.size(), 1U);
    EXPECT_NE(warnings[0].find(depfile + ": " + reason), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("link line"), std::string::npos) << warnings[0];
    ASSERT_EQ(::remove(depfile.c_str()), 0);
  }
}

TEST(LinkInputs, AnInputNamedWithANulByteIsSkippedWithAWarningAndTheOthersKept)
{
  // The name up to the NUL names a file, so a check through c_str() passes
  // it; digesting or recording the full name then dropped the whole target.
  const test::TempDir dir;
  const std::string lib = dir / "li";
  const std::string depfile = dir / "app.d";
  test::write_file(lib, "li\n");
  test::write_file(dir / "liba.a", "a\n");
  test::write_file(depfile, "app: \\\n  " + dir / "liba.a" + " \\\n  " + lib + std::string("\0b.a", 4) + "\n");
  Paths warnings;
  EXPECT_EQ(
    collect_link_inputs(
      {"/usr/bin/c++"}, depfile, "/b/app", "/b", true, [&](const std::string& text) { warnings.push_back(text); }),
    Paths{dir / "liba.a"});
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_EQ(warnings[0], depfile + ": an input's name holds a NUL byte, skipped: " + lib + "\\0b.a");
}

TEST(LinkInputs, ASettingsFileWithANulByteIsAnErrorThatNamesItsLine)
{
  // Found by launch_fuzz: "consumes=liba.a\0" became a path that cut the
  // warning short at the NUL.
  const test::TempDir dir;
  std::filesystem::create_directories(dir / "app");
  test::write_file(dir / "app/Release.args",
                   "output=" + dir / "app.out" + "\nconsumes=liba.a" + std::string(1, '\0') + "\n");
  auto settings = load_target_settings(dir.path(), "app", dir / "app.out");
  ASSERT_FALSE(settings);
  EXPECT_EQ(settings.error().message, dir / "app/Release.args" + ":2: a NUL byte: not a settings file");
}

} // namespace
} // namespace fingerprint::hook
