#include <fingerprint/cmd/args.hpp>

#include <gtest/gtest.h>

namespace fingerprint::cmd {
namespace {

constexpr OptionSpec k_specs[] = {
  {"json", OptionKind::flag},
  {"store", OptionKind::value, "DIR"},
  {"produced", OptionKind::values, "FILE"},
  {"consumed", OptionKind::values, "FILE"},
};

Expected<Args>
parse(std::vector<std::string> arguments)
{
  return Args::parse(arguments, k_specs);
}

TEST(Args, FlagsValuesAndListsUpToTheNextOption)
{
  auto args = parse({"--json", "--store=/s", "--produced", "a", "b", "--consumed", "c", "--", "--odd"});
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_TRUE(args->flag("json"));
  EXPECT_EQ(args->value("store"), "/s");
  EXPECT_EQ(args->values("produced"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(args->values("consumed"), (std::vector<std::string>{"c"}));
  EXPECT_EQ(args->positional(), (std::vector<std::string>{"--odd"}));
  EXPECT_FALSE(args->value("missing"));
  EXPECT_TRUE(args->values("missing").empty());

  auto separate = parse({"--store", "/t", "file", "-"});
  ASSERT_TRUE(separate);
  EXPECT_EQ(separate->value("store"), "/t");
  EXPECT_EQ(separate->positional(), (std::vector<std::string>{"file", "-"}));
}

TEST(Args, UsageErrorsSayWhatIsWrong)
{
  auto typo = parse({"--produce", "a"});
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("did you mean '--produced'"), std::string::npos) << typo.error().message;
  auto far = parse({"--zzzzzzzz"});
  ASSERT_FALSE(far);
  EXPECT_EQ(far.error().message.find("did you mean"), std::string::npos);
  EXPECT_FALSE(parse({"--store"}));
  EXPECT_FALSE(parse({"--store", "--json"}));
  EXPECT_FALSE(parse({"--produced"}));
  EXPECT_FALSE(parse({"--json=yes"}));
  EXPECT_FALSE(parse({"--json", "--json"}));
  EXPECT_FALSE(parse({"-j"}));
}

} // namespace
} // namespace fingerprint::cmd
