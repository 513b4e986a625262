#include <fingerprint/hook/build_id.hpp>

#include <gtest/gtest.h>

#include <algorithm>

namespace fingerprint::hook {
namespace {

// Process trees as /proc shows them; start times in clock ticks since boot.
const ProcessFacts k_init{.pid = 1, .name = "init", .parent = 0, .session = 1, .start = 1};
const ProcessFacts k_login{.pid = 50, .name = "bash", .parent = 1, .session = 50, .start = 10};
const ProcessFacts k_ninja{.pid = 100, .name = "ninja", .parent = 50, .session = 50, .start = 1000};
const std::string k_boot = "4a5b7c0e-0000-4000-8000-000000000001";

ProcessFacts
process(long pid, const char* name, long parent, unsigned long long start, long session = 50)
{
  return {.pid = pid, .name = name, .parent = parent, .session = session, .start = start};
}

// A link step under `tool`: the hook (launch) under the shell ninja runs it in.
std::vector<ProcessFacts>
link_under(const ProcessFacts& tool, long sh, unsigned long long start)
{
  return {process(sh + 1, "fingerprint", sh, start + 1), process(sh, "sh", tool.pid, start), tool, k_login, k_init};
}

// The same step once `tool` was killed: its shell was reparented to init.
std::vector<ProcessFacts>
orphaned(long sh, unsigned long long start)
{
  return {process(sh + 1, "fingerprint", sh, start + 1), process(sh, "sh", 1, start), k_init};
}

struct Tree
{
  std::string text;
  bool tool_alive = false;
  bool rewritten = false; // by the last hook
  int tags_drawn = 0;

  std::string
  hook(const std::vector<ProcessFacts>& chain, const std::string& boot = k_boot)
  {
    auto step = step_sequence(
      text,
      chain,
      boot,
      [&](long, unsigned long long) { return tool_alive; },
      [&] {
        ++tags_drawn;
        return std::string("0badc0de");
      });
    rewritten = !step.text.empty();
    if (rewritten) {
      text = step.text;
    }
    return step.build_id;
  }
};

TEST(BuildSequence, TheHooksOfOneNinjaRunShareANumberAndTheNextRunAdvances)
{
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(k_ninja, 210, 1110)), "1-0badc0de");
  const auto next = process(101, "ninja", 50, 3000);
  EXPECT_EQ(tree.hook(link_under(next, 300, 3100)), "2-0badc0de");
}

// Only a ninja's or a make's run is a tool's (digest::BuildMemo is kept
// for it): not a script's process above a hook, nor a killed run an orphan
// joins.
TEST(BuildSequence, TheRunIsAToolsOnlyUnderANinjaOrAMake)
{
  const auto step_of = [](const std::string& text, const std::vector<ProcessFacts>& chain) {
    return step_sequence(
      text, chain, k_boot, [](long, unsigned long long) { return false; }, [] { return std::string("0badc0de"); });
  };
  const auto ninja = step_of("", link_under(k_ninja, 200, 1100));
  EXPECT_TRUE(ninja.tool);
  EXPECT_EQ(ninja.identity, "100:1000");
  const auto make = process(120, "make", 50, 1000);
  EXPECT_TRUE(step_of("", link_under(make, 200, 1100)).tool);
  const auto script = process(130, "python3", 50, 1000);
  const auto scripted = step_of("", link_under(script, 200, 1100));
  EXPECT_FALSE(scripted.tool) << scripted.identity;
  const auto orphan = step_of(ninja.text, orphaned(220, 1150));
  EXPECT_EQ(orphan.build_id, ninja.build_id) << "joins the killed run";
  EXPECT_FALSE(orphan.tool);
}

TEST(BuildSequence, AnOrphanOfAKilledNinjaJoinsTheRunItStartedIn)
{
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(k_ninja, 210, 1200)), "1-0badc0de");
  // ninja killed: a link it had started (sh at 1150) comes back without it.
  EXPECT_EQ(tree.hook(orphaned(220, 1150)), "1-0badc0de");
  EXPECT_EQ(tree.hook(orphaned(230, 1200)), "1-0badc0de") << "started in the tick of the last live hook";
  // The next run, and a late orphan of the first after it started.
  const auto next = process(101, "ninja", 50, 3000);
  EXPECT_EQ(tree.hook(link_under(next, 300, 3100)), "2-0badc0de");
  EXPECT_EQ(tree.hook(orphaned(240, 1190)), "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(next, 310, 3110)), "2-0badc0de");
}

TEST(BuildSequence, AProcessThatIsNotAnOrphanOfARememberedRunAdvancesAsBefore)
{
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  // Started after the run's last live hook: nothing says ninja was alive then.
  EXPECT_EQ(tree.hook(orphaned(220, 1500)), "2-0badc0de");
  // A launch run by hand from a login shell older than the run.
  Tree by_hand;
  EXPECT_EQ(by_hand.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  const std::vector<ProcessFacts> shell{process(60, "fingerprint", 50, 5000), k_login, k_init};
  EXPECT_EQ(by_hand.hook(shell), "2-0badc0de");
  EXPECT_EQ(by_hand.hook({process(61, "fingerprint", 50, 5100), k_login, k_init}), "2-0badc0de")
    << "the same shell is the same invocation, as before";
  // Another session (another terminal, another CI job).
  Tree other_session;
  EXPECT_EQ(other_session.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_EQ(other_session.hook({process(221, "fingerprint", 220, 1151, 70), process(220, "sh", 1, 1150, 70), k_init}),
            "2-0badc0de");
}

TEST(BuildSequence, AnOrphanDoesNotJoinARunWhoseToolIsStillAlive)
{
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(k_ninja, 210, 1200)), "1-0badc0de");
  tree.tool_alive = true; // then the orphan's parent died, not the run's ninja
  EXPECT_EQ(tree.hook(orphaned(220, 1150)), "2-0badc0de");
}

TEST(BuildSequence, WhatTheSubMakeOfAKilledMakeStartsJoinsTheMakeRun)
{
  const auto top = process(100, "make", 50, 1000);
  const auto sub = process(110, "make", 100, 1005); // make -f CMakeFiles/Makefile2
  Tree tree;
  EXPECT_EQ(tree.hook({process(201, "fingerprint", 200, 1101),
                       process(200, "sh", 120, 1100),
                       process(120, "make", 110, 1090),
                       sub,
                       top,
                       k_login,
                       k_init}),
            "1-0badc0de");
  auto orphan_sub = sub;
  orphan_sub.parent = 1;
  EXPECT_EQ(tree.hook({process(301, "fingerprint", 300, 2001),
                       process(300, "sh", 130, 2000),
                       process(130, "make", 110, 1990),
                       orphan_sub,
                       k_init}),
            "1-0badc0de");
}

TEST(BuildSequence, TheNearestNinjaOfNestedBuildsIsTheInvocation)
{
  const auto inner = process(300, "ninja", 299, 1500);
  Tree tree;
  EXPECT_EQ(tree.hook({process(401, "fingerprint", 400, 1601),
                       process(400, "sh", 300, 1600),
                       inner,
                       process(299, "cmake", 298, 1490),
                       process(298, "sh", 100, 1480),
                       k_ninja,
                       k_login,
                       k_init}),
            "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1700)), "2-0badc0de");
}

TEST(BuildSequence, TwoRunsSideBySideKeepTheirNumbers)
{
  const auto other = process(101, "ninja", 50, 1010);
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(other, 300, 1110)), "2-0badc0de");
  EXPECT_EQ(tree.hook(link_under(k_ninja, 210, 1120)), "1-0badc0de");
}

TEST(BuildSequence, ARebootForgetsPidsAndStartTimes)
{
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  // The same pid and start time after a reboot is another process.
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100), "4a5b7c0e-0000-4000-8000-000000000002"), "2-0badc0de");
  // A reused pid within one boot has another start time.
  EXPECT_EQ(tree.hook(link_under(process(100, "ninja", 50, 9000), 200, 9100), "4a5b7c0e-0000-4000-8000-000000000002"),
            "3-0badc0de");
}

TEST(BuildSequence, AnOlderRunnersFileKeepsItsNumberAndTag)
{
  Tree tree{.text = "7 12345678 100:1000\n"};
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "7-12345678");
  EXPECT_EQ(tree.text.substr(0, 20), "7 12345678 100:1000 ") << "older runners read the first three fields";
  EXPECT_EQ(tree.hook(link_under(process(101, "ninja", 50, 3000), 300, 3100)), "8-12345678");
  Tree garbled{.text = "x y z\n"};
  EXPECT_EQ(garbled.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
}

TEST(BuildSequence, TheFileRemembersTheLastSixteenRuns)
{
  Tree tree;
  for (unsigned long long run = 0; run < 40; ++run) {
    tree.hook(link_under(process(100 + static_cast<long>(run), "ninja", 50, 1000 + run * 100), 1000, 1050 + run * 100));
  }
  EXPECT_EQ(std::count(tree.text.begin(), tree.text.end(), '\n'), 17);
  EXPECT_EQ(tree.text.substr(0, 3), "40 ");
}

TEST(BuildSequence, MostHooksOfARunLeaveTheFileAsItIs)
{
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_TRUE(tree.rewritten) << "the run's first hook advances the number";
  EXPECT_EQ(tree.tags_drawn, 1) << "a tree without a tag gets one";
  // Hooks 10 ms apart within the second after the last one written (1101).
  for (unsigned long long start = 1110; start <= 1200; start += 10) {
    EXPECT_EQ(tree.hook(link_under(k_ninja, 210, start)), "1-0badc0de");
    EXPECT_FALSE(tree.rewritten) << "a hook started at " << start << " rewrote the file:\n" << tree.text;
  }
  EXPECT_EQ(tree.hook(link_under(k_ninja, 220, 1201)), "1-0badc0de");
  EXPECT_TRUE(tree.rewritten) << "more than a second after the last live hook written";
  EXPECT_EQ(tree.hook(link_under(k_ninja, 230, 1210)), "1-0badc0de");
  EXPECT_FALSE(tree.rewritten);
  EXPECT_EQ(tree.hook(link_under(process(101, "ninja", 50, 3000), 300, 3100)), "2-0badc0de");
  EXPECT_TRUE(tree.rewritten) << "the next run advances the number";
  EXPECT_EQ(tree.tags_drawn, 1) << "no random tag is drawn for a tree that has one";
}

TEST(BuildSequence, AnOrphanJoinsAsIfEveryLiveHookHadBeenWritten)
{
  // The live hooks started at 1101 (written) and 1191 (not: within the
  // second); an orphan from before the last of them still joins.
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  EXPECT_EQ(tree.hook(link_under(k_ninja, 210, 1190)), "1-0badc0de");
  EXPECT_FALSE(tree.rewritten);
  EXPECT_EQ(tree.hook(orphaned(220, 1180)), "1-0badc0de");
  EXPECT_EQ(tree.hook(orphaned(230, 1190)), "1-0badc0de");
  EXPECT_EQ(tree.hook(orphaned(250, 1201)), "1-0badc0de") << "within the second after the written one";
  // Past it, nothing says the tool was alive.
  EXPECT_EQ(tree.hook(orphaned(240, 1202)), "2-0badc0de");
}

TEST(BuildSequence, AFileLeftPaddedByAHookKilledBeforeItCutTheFileReadsTheSame)
{
  // rewrite() pads the new text with newlines to the old length and then
  // cuts it: a hook killed in between leaves the padding.
  Tree tree;
  EXPECT_EQ(tree.hook(link_under(k_ninja, 200, 1100)), "1-0badc0de");
  const std::string written = tree.text;
  tree.text += std::string(40, '\n');
  EXPECT_EQ(tree.hook(link_under(k_ninja, 210, 1110)), "1-0badc0de");
  EXPECT_EQ(tree.text, written) << "the next hook that looks writes it without the padding";
  EXPECT_EQ(tree.hook(link_under(process(101, "ninja", 50, 3000), 300, 3100)), "2-0badc0de");
  EXPECT_EQ(tree.tags_drawn, 1);
}

} // namespace
} // namespace fingerprint::hook
