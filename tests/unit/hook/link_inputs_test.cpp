#include <fingerprint/hook/link_inputs.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <cstdlib>
#include <fcntl.h>
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
  EXPECT_EQ(
    collect_link_inputs(command, "", "/b/app", "/b", true, [](const std::string& warning) { ADD_FAILURE() << warning; })
      .inputs,
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
                command, depfile, "/b/app", "/b", true, [&](const std::string& text) { warnings.push_back(text); })
                .inputs,
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
      {"/usr/bin/c++"}, depfile, "/b/app", "/b", true, [&](const std::string& text) { warnings.push_back(text); })
      .inputs,
    Paths{dir / "liba.a"});
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_EQ(warnings[0], depfile + ": an input's name holds a NUL byte, skipped: " + lib + "\\0b.a");
}

TEST(CompileInputs, TheCompilersDependencyFileGivesEveryPathOfItsFirstRule)
{
  // GCC writes several paths to a line and escapes spaces; a depfile of
  // GNU ld's kind, one path per line, reads the same.
  EXPECT_EQ(parse_compiler_depfile("obj/a.cpp.o: /src/a.cpp /src/my\\ dir/a.hpp \\\n"
                                   " /usr/include/stdio.h \\\n  gen/c$$.h\n/src/a.hpp:\n"),
            (Paths{"/src/a.cpp", "/src/my dir/a.hpp", "/usr/include/stdio.h", "gen/c$.h"}));
  EXPECT_EQ(parse_compiler_depfile("obj/a.o: \\\n /src/a.c\r\n"), Paths{"/src/a.c"});
  EXPECT_EQ(parse_compiler_depfile(""), Paths{});
}

TEST(CompileInputs, AnArchivesObjectsComeFromItsCommandAndAResponseFile)
{
  const test::TempDir dir;
  for (const char* name : {"a.o", "b.o", "c.o"}) {
    test::write_file(dir / name, "obj\n");
  }
  test::write_file(dir / "objects.rsp", dir / "b.o" + " \"" + dir / "c.o" + "\"\n");
  const auto found = collect_link_inputs({"/usr/bin/ar", "qc", dir / "lib.a", dir / "a.o", "@" + dir / "objects.rsp"},
                                         "",
                                         dir / "lib.a",
                                         dir.path(),
                                         false,
                                         [](const std::string& warning) { ADD_FAILURE() << warning; });
  EXPECT_EQ(found.inputs, Paths{});
  EXPECT_EQ(found.objects, (Paths{dir / "a.o", dir / "b.o", dir / "c.o"}));
}

TEST(CompileInputs, ARecordOlderThanItsObjectIsNotTrustedAndMakesDependencyFilesAreRead)
{
  const test::TempDir dir;
  const std::string fresh = dir / "CMakeFiles/t.dir/fresh.o";
  const std::string stale = dir / "CMakeFiles/t.dir/stale.o";
  const std::string made = dir / "sub/CMakeFiles/t.dir/made.o";
  std::filesystem::create_directories(dir / "CMakeFiles/t.dir");
  std::filesystem::create_directories(dir / "sub/CMakeFiles/t.dir");
  test::write_file(fresh, "o");
  test::write_file(compile_record_path(fresh), std::string("/src/a.cpp\0/src/a.hpp\0", 22));
  test::write_file(compile_record_path(stale), std::string("/src/old.hpp\0", 13));
  test::write_file(stale, "o"); // rebuilt after its record: the record is not its
  const timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, compile_record_path(stale).c_str(), times, 0), 0);
  test::write_file(made, "o");
  test::write_file(made + ".d", "CMakeFiles/t.dir/made.o: /src/m.cpp gen/m.hpp /src/a.hpp\n");
  size_t missing = 0;
  EXPECT_EQ(compile_inputs({fresh, stale, made}, missing),
            (Paths{"/src/a.cpp", "/src/a.hpp", "/src/m.cpp", dir / "sub/gen/m.hpp"}));
  EXPECT_EQ(missing, 1U);
}

// Under Ninja, an object compiled without the compile launcher (before
// fingerprinting was set up) still has what its compile read in Ninja's
// deps log, while the object is the one that record was made for.
TEST(CompileInputs, NinjasDepsLogAnswersForAnObjectWithoutARecord)
{
  const test::TempDir dir;
  std::filesystem::create_directories(dir / "CMakeFiles/t.dir");
  test::write_file(dir / "n.cpp", "");
  test::write_file(dir / "n.hpp", "");
  test::write_file(dir / "build.ninja",
                   "rule cc\n"
                   "  command = printf '$out: n.cpp n.hpp /usr/include/stdio.h\\n' > $out.d && touch $out\n"
                   "  depfile = $out.d\n"
                   "  deps = gcc\n"
                   "build CMakeFiles/t.dir/n.o: cc n.cpp\n");
  const std::string build = "cd '" + std::string(dir.path()) + "' && ninja >/dev/null 2>&1";
  ASSERT_EQ(std::system(build.c_str()), 0);
  const std::string object = dir / "CMakeFiles/t.dir/n.o";
  ASSERT_FALSE(std::filesystem::exists(object + ".d")) << "ninja keeps the dependency file";
  size_t missing = 9;
  EXPECT_EQ(compile_inputs({object}, missing, dir.path()),
            (Paths{dir / "n.cpp", dir / "n.hpp", "/usr/include/stdio.h"}));
  EXPECT_EQ(missing, 0U);
  // Without the build tree the log is not looked for.
  EXPECT_EQ(compile_inputs({object}, missing), Paths{});
  EXPECT_EQ(missing, 1U);
  // Made again outside Ninja: the record is no longer this object's.
  const timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, object.c_str(), times, 0), 0);
  EXPECT_EQ(compile_inputs({object}, missing, dir.path()), Paths{});
  EXPECT_EQ(missing, 1U);
}

// A process that hooks many links (the recorder) keeps a tree's deps log
// and reads only what Ninja appended since; a log made anew (a new file,
// perhaps under the inode of the one removed) is read anew.
TEST(CompileInputs, ADepsLogReadOnAsNinjaAppendsAndAnewWhenMadeAgain)
{
  const test::TempDir dir;
  std::filesystem::create_directories(dir / "o");
  for (const char* name : {"a.cpp", "b.cpp", "a.hpp", "b.hpp", "c.hpp"}) {
    test::write_file(dir / name, "");
  }
  const auto write_rules = [&](const std::string& a_deps, bool with_b) {
    test::write_file(dir / "build.ninja",
                     "rule cc\n"
                     "  command = printf \"$out: $reads\\n\" > $out.d && touch $out\n"
                     "  depfile = $out.d\n"
                     "  deps = gcc\n"
                     "build o/a.o: cc a.cpp\n  reads = "
                       + a_deps + "\n" + (with_b ? "build o/b.o: cc b.cpp\n  reads = b.cpp b.hpp\n" : ""));
  };
  const std::string build = "cd '" + std::string(dir.path()) + "' && ninja >/dev/null 2>&1";
  write_rules("a.cpp a.hpp", false);
  ASSERT_EQ(std::system(build.c_str()), 0);
  size_t missing = 9;
  EXPECT_EQ(compile_inputs({dir / "o/a.o"}, missing, dir.path()), (Paths{dir / "a.cpp", dir / "a.hpp"}));
  write_rules("a.cpp a.hpp", true); // b.o's record is appended
  ASSERT_EQ(std::system(build.c_str()), 0);
  EXPECT_EQ(compile_inputs({dir / "o/b.o"}, missing, dir.path()), (Paths{dir / "b.cpp", dir / "b.hpp"}));
  EXPECT_EQ(missing, 0U);
  // Made anew: the log and the objects removed, a.o now reading c.hpp.
  std::filesystem::remove(dir / ".ninja_deps");
  std::filesystem::remove(dir / ".ninja_log");
  std::filesystem::remove(dir / "o/a.o");
  std::filesystem::remove(dir / "o/b.o");
  write_rules("a.cpp c.hpp", false);
  ASSERT_EQ(std::system(build.c_str()), 0);
  EXPECT_EQ(compile_inputs({dir / "o/a.o"}, missing, dir.path()), (Paths{dir / "a.cpp", dir / "c.hpp"}));
  EXPECT_EQ(missing, 0U);
  // Another tree's larger log written over this one in place: the same
  // inode, as a file made anew may get, and no shorter.
  const test::TempDir other;
  for (const char* name : {"a.cpp", "b.cpp", "b.hpp", "c.hpp"}) {
    test::write_file(other / name, "");
  }
  std::filesystem::create_directories(other / "o");
  test::write_file(other / "build.ninja",
                   "rule cc\n"
                   "  command = printf \"$out: $reads\\n\" > $out.d && touch $out\n"
                   "  depfile = $out.d\n"
                   "  deps = gcc\n"
                   "build o/b.o: cc b.cpp\n  reads = b.cpp b.hpp c.hpp\n"
                   "build o/a.o: cc a.cpp\n  reads = a.cpp b.hpp\n");
  ASSERT_EQ(std::system(("cd '" + std::string(other.path()) + "' && ninja >/dev/null 2>&1").c_str()), 0);
  ASSERT_GT(std::filesystem::file_size(other / ".ninja_deps"), std::filesystem::file_size(dir / ".ninja_deps"));
  const auto inode = [](const std::string& path) {
    struct stat st
    {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  const auto before = inode(dir / ".ninja_deps");
  std::filesystem::copy_file(
    other / ".ninja_deps", dir / ".ninja_deps", std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(inode(dir / ".ninja_deps"), before);
  struct stat made
  {};
  ASSERT_EQ(::stat((other / "o/a.o").c_str(), &made), 0);
  const timespec times[2] = {{0, UTIME_OMIT}, made.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir / "o/a.o").c_str(), times, 0), 0);
  EXPECT_EQ(compile_inputs({dir / "o/a.o"}, missing, dir.path()), (Paths{(dir / "a.cpp"), (dir / "b.hpp")}));
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
