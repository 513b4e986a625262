#include <fingerprint/cmd/launch.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace fingerprint::cmd {
namespace {

// $GLIBC_TUNABLES after set_resident_tunables(), starting from `before`
// (unset when empty); the test's own value is put back.
std::optional<std::string>
tunables_after(const char* before)
{
  const char* own = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> kept = own != nullptr ? std::optional<std::string>(own) : std::nullopt;
  if (before != nullptr) {
    ::setenv("GLIBC_TUNABLES", before, 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
  set_resident_tunables();
  const char* after = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> result = after != nullptr ? std::optional<std::string>(after) : std::nullopt;
  if (kept) {
    ::setenv("GLIBC_TUNABLES", kept->c_str(), 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
  return result;
}

TEST(ResidentTunables, AThreadCacheOfAThousandBlocksASize)
{
  EXPECT_EQ(tunables_after(nullptr), "glibc.malloc.tcache_count=1024");
  EXPECT_EQ(tunables_after(""), "glibc.malloc.tcache_count=1024");
}

TEST(ResidentTunables, AfterTheUsersOwn)
{
  EXPECT_EQ(tunables_after("glibc.malloc.perturb=0"), "glibc.malloc.perturb=0:glibc.malloc.tcache_count=1024");
}

TEST(ResidentTunables, TheUsersCountStands)
{
  EXPECT_EQ(tunables_after("glibc.malloc.check=0:glibc.malloc.tcache_count=5"),
            "glibc.malloc.check=0:glibc.malloc.tcache_count=5");
}

} // namespace
} // namespace fingerprint::cmd
