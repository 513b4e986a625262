#include <fingerprint/core/link_inputs.hpp>

#include <gtest/gtest.h>

namespace fingerprint::core {
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

TEST(LinkInputs, TheLinkLineGivesLibrariesWhenThereIsNoDependencyFile)
{
  // Existing files only: the command names them relative to the build tree.
  const std::vector<std::string> command = {
    "/usr/bin/c++", "main.o", "-o", "app", "/lib/x86_64-linux-gnu/libc.so.6", "-lm", "/nonexistent/libz.a"};
  EXPECT_EQ(collect_link_inputs(command, "", "/b/app", "/b", true), Paths{"/lib/x86_64-linux-gnu/libc.so.6"});
}

} // namespace
} // namespace fingerprint::core
