#include <fingerprint/cmd/in_toto_link.hpp>

#include <gtest/gtest.h>

namespace fingerprint::cmd {
namespace {

// The answers are securesystemslib 0.26's (formats.encode_canonical and
// keys.format_metadata_to_key), which in-toto-verify uses.

TEST(CanonicalJson, SortsKeysByBytesAndEscapesOnlyQuoteAndBackslash)
{
  const nlohmann::json value = {{"b", "x\"y\\z\n\xc3\xa9"},
                                {"a", {1, true, nullptr, -3, nlohmann::json::object()}},
                                {"A", nlohmann::json::array()}};
  auto text = canonical_json(value);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "{\"A\":[],\"a\":[1,true,null,-3,{}],\"b\":\"x\\\"y\\\\z\n\xc3\xa9\"}");
}

TEST(CanonicalJson, RefusesFloats)
{
  auto text = canonical_json({{"size", 1.5}});
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("1.5"), std::string::npos) << text.error().message;
}

TEST(InTotoKeyId, IsSecuresystemslibs)
{
  std::string raw;
  for (char byte = 0; byte < 32; ++byte) {
    raw += byte;
  }
  EXPECT_EQ(in_toto_key_id(raw), "87f5e38ffd82d32476fb443d6220fbf591299ca6cb6ef5c85bdcd156a4e60ad0");
}

} // namespace
} // namespace fingerprint::cmd
