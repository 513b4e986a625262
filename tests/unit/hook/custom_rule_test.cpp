// A custom command's DEPENDS and DEPFILE, read from the build files CMake
// 3.25 generates (the snippets are as it writes them, paths shortened).

#include <fingerprint/hook/custom_rule.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <filesystem>

namespace fingerprint::hook {
namespace {

using Paths = std::vector<std::string>;

// Ninja: the edge of `add_custom_command(OUTPUT gen.h gen2.h COMMAND tool
// gen.h DEPENDS tool data.txt "sp ace.txt" DEPFILE gen.d)`.
constexpr std::string_view k_ninja = R"(# Custom command for gen.h

build gen.h gen2.h | ${cmake_ninja_workdir}gen.h ${cmake_ninja_workdir}gen2.h: CUSTOM_COMMAND tool /s/data.txt /s/sp$ ace.txt || tool
  COMMAND = cd /b && /b/tool /b/gen.h && /usr/bin/cmake -E cmake_transform_depfile Ninja gccdepfile /s /s /b /b "/b/my gen.d" /b/CMakeFiles/d/eb10.d
  DESC = Generating gen.h, gen2.h
  depfile = /b/CMakeFiles/d/eb10.d
  restat = 1

build sub/other.h | ${cmake_ninja_workdir}sub/other.h: CUSTOM_COMMAND /s/sub/other.in $
    /s/sub/more$:x.in | implicit.txt || cmake_object_order_depends_target_x
  COMMAND = cd /b/sub && cp /s/sub/other.in other.h
  depfile = sub/other.d

build gen.h.o: CXX_COMPILER__x_ gen.h.c
)";

TEST(CustomRule, ANinjaEdgeGivesItsExplicitAndImplicitInputsAndTheCommandsOwnDepfile)
{
  auto edge = find_ninja_edge(k_ninja, "gen.h");
  ASSERT_TRUE(edge);
  // Not the order-only "tool" after "||"; "$ " is a space.
  EXPECT_EQ(edge->inputs, (Paths{"tool", "/s/data.txt", "/s/sp ace.txt"}));
  // The DEPFILE given, not the one CMake transforms it into for Ninja.
  EXPECT_EQ(edge->depfile, "/b/my gen.d");
  // Its second output names the same edge.
  auto second = find_ninja_edge(k_ninja, "gen2.h");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->inputs, edge->inputs);
}

TEST(CustomRule, ANinjaEdgeReadsAcrossContinuationsAndWithoutATransformStep)
{
  auto edge = find_ninja_edge(k_ninja, "sub/other.h");
  ASSERT_TRUE(edge);
  EXPECT_EQ(edge->inputs, (Paths{"/s/sub/other.in", "/s/sub/more:x.in", "implicit.txt"}));
  EXPECT_EQ(edge->depfile, "sub/other.d"); // the binding, when no transform step names one
}

TEST(CustomRule, NoEdgeForAnOutputNoBuildLineMakes)
{
  EXPECT_FALSE(find_ninja_edge(k_ninja, "other.h")); // "sub/other.h" is another file
  EXPECT_FALSE(find_ninja_edge(k_ninja, "tool"));    // an input, not an output
  EXPECT_FALSE(find_ninja_edge(k_ninja, "gen.h.c"));
  EXPECT_FALSE(find_ninja_edge("", "gen.h"));
}

// Unix Makefiles: sub/CMakeFiles/sg.dir/build.make and DependInfo.cmake.
constexpr std::string_view k_build_make = R"(sub/CMakeFiles/sg: sub/sgen.h

sub/sgen.h: tool
sub/sgen.h: /s/sub/sdata.txt
sub/sgen.h: /s/sub/sp\ ace.txt
sub/sgen.h: sub/CMakeFiles/sg.dir/compiler_depend.ts
	@$(CMAKE_COMMAND) -E cmake_echo_color --switch=$(COLOR) --blue --bold "Generating sgen.h"
	cd /b/sub && ../tool sgen.h

sub/sgen.h.bak: /s/other
)";

constexpr std::string_view k_depend_info = R"(# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "" "sub/sgen.h" "custom" "sub/sgen.d"
  "" "sub/x.h" "custom" "sub/x.d"
  )
)";

TEST(CustomRule, ABuildMakeGivesTheInputsOfItsRulesLinesAndDependInfoTheDepfile)
{
  EXPECT_EQ(find_make_inputs(k_build_make, "sub/sgen.h"),
            (Paths{"tool", "/s/sub/sdata.txt", "/s/sub/sp ace.txt", "sub/CMakeFiles/sg.dir/compiler_depend.ts"}));
  EXPECT_EQ(find_make_inputs(k_build_make, "sgen.h"), Paths{});
  EXPECT_EQ(find_make_depfile(k_depend_info, "sub/sgen.h"), "sub/sgen.d");
  EXPECT_EQ(find_make_depfile(k_depend_info, "sub/y.h"), "");
}

TEST(CustomRule, TheRuleOfABuildTreeHasItsExistingFilesAbsoluteAndNotCMakesOwn)
{
  test::TempDir dir;
  const std::string b = dir / "b";
  std::filesystem::create_directories(b + "/CMakeFiles/d");
  std::filesystem::create_directories(dir / "s");
  test::write_file(b + "/build.ninja",
                   "include CMakeFiles/rules.ninja\n"
                   "build gen.h | ${cmake_ninja_workdir}gen.h: CUSTOM_COMMAND tool ../s/data.txt gone.txt "
                   "CMakeFiles/d/x.stamp || tool\n"
                   "  COMMAND = cd "
                     + b
                     + " && ./tool gen.h\n"
                       "  depfile = gen.d\n");
  test::write_file(b + "/tool", "#!/bin/sh\n");
  test::write_file(dir / "s/data.txt", "data\n");
  test::write_file(b + "/CMakeFiles/d/x.stamp", "");
  auto rule = find_custom_rule(b, b + "/gen.h", b);
  ASSERT_TRUE(rule);
  // The missing file and CMake's own under CMakeFiles/ are left out.
  EXPECT_EQ(rule->depends, (Paths{b + "/tool", dir / "s/data.txt"}));
  EXPECT_EQ(rule->depfile, b + "/gen.d");
  EXPECT_FALSE(find_custom_rule(b, b + "/other.h", b));
}

TEST(CustomRule, AMakefilesTreeIsReadFromTheCommandsDirectoryTargets)
{
  test::TempDir dir;
  const std::string b = dir / "b";
  std::filesystem::create_directories(b + "/sub/CMakeFiles/sg.dir");
  std::filesystem::create_directories(b + "/sub/CMakeFiles/other.dir");
  test::write_file(b + "/Makefile", "all:\n");
  test::write_file(b + "/sub/CMakeFiles/other.dir/build.make", "sub/else.h: tool\n");
  test::write_file(b + "/sub/CMakeFiles/sg.dir/build.make", std::string(k_build_make));
  test::write_file(b + "/sub/CMakeFiles/sg.dir/DependInfo.cmake", std::string(k_depend_info));
  test::write_file(b + "/tool", "#!/bin/sh\n");
  auto rule = find_custom_rule(b, b + "/sub/sgen.h", b + "/sub");
  ASSERT_TRUE(rule);
  EXPECT_EQ(rule->depends, Paths{b + "/tool"}); // /s/... do not exist here
  EXPECT_EQ(rule->depfile, b + "/sub/sgen.d");
  // A command run in another directory: the output's directory is looked at.
  auto elsewhere = find_custom_rule(b, b + "/sub/sgen.h", dir.path());
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->depends, rule->depends);
  EXPECT_FALSE(find_custom_rule(b, b + "/sub/none.h", b + "/sub"));
}

} // namespace
} // namespace fingerprint::hook
