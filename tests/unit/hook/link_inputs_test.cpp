#include <fingerprint/hook/link_inputs.hpp>

#include <gtest/gtest.h>

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
  EXPECT_EQ(collect_link_inputs(command, "", "/b/app", "/b", true), Paths{"/lib/x86_64-linux-gnu/libc.so.6"});
}

} // namespace
} // namespace fingerprint::hook
