// The Debian package that owns a file, from a dpkg database laid out as
// dpkg keeps it (status and info/*.list), indexed once into the cache.

#include <fingerprint/query/packages.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <filesystem>
#include <sys/stat.h>
#include <utime.h>

namespace fingerprint::query {
namespace {

// A database of three packages: one multi-arch library (installed for one
// architecture, its list named "<package>:<arch>"), one "all" package, and
// one removed but not purged (its list is still there).
void
write_database(const std::string& admin)
{
  std::filesystem::create_directories(admin + "/info");
  test::write_file(admin + "/status",
                   "Package: libz1\n"
                   "Status: install ok installed\n"
                   "Architecture: amd64\n"
                   "Multi-Arch: same\n"
                   "Version: 1:1.2.13.dfsg-1\n"
                   "Description: compression\n"
                   " a continuation line: Version: 9\n"
                   "\n"
                   "Package: zheaders\n"
                   "Status: install ok installed\n"
                   "Architecture: all\n"
                   "Version: 2.0-1\n"
                   "\n"
                   "Package: gone\n"
                   "Status: deinstall ok config-files\n"
                   "Architecture: amd64\n"
                   "Version: 0.1\n");
  test::write_file(admin + "/info/libz1:amd64.list",
                   "/.\n/lib\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libz.so.1.2.13\n"
                   "/usr/share/doc/libz1/copyright\n");
  test::write_file(admin + "/info/zheaders.list",
                   "/.\n/usr\n/usr/include\n/usr/include/zlib.h\n/usr/include/zconf.h\n");
  test::write_file(admin + "/info/gone.list", "/usr/bin/gone\n");
  test::write_file(admin + "/info/libz1:amd64.md5sums", "not a list\n");
}

TEST(PackageIndex, AFileIsOwnedByItsPackageWithItsVersionAndArchitecture)
{
  test::TempDir dir;
  write_database(dir / "dpkg");
  auto index = PackageIndex::open(dir / "dpkg", dir / "cache");
  ASSERT_TRUE(index) << index.error().message;
  EXPECT_FALSE(index->cached());
  EXPECT_EQ(index->owner("/usr/include/zlib.h"), (PackageOrigin{"zheaders", "all", "2.0-1", "/usr/include/zlib.h"}));
  EXPECT_EQ(index->owner("/lib/x86_64-linux-gnu/libz.so.1.2.13"),
            (PackageOrigin{"libz1", "amd64", "1:1.2.13.dfsg-1", "/lib/x86_64-linux-gnu/libz.so.1.2.13"}));
  // The merged-/usr spelling of a path the package lists under /lib.
  EXPECT_EQ(index->owner("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"),
            (PackageOrigin{"libz1", "amd64", "1:1.2.13.dfsg-1", "/lib/x86_64-linux-gnu/libz.so.1.2.13"}));
  EXPECT_FALSE(index->owner("/usr/bin/gone")); // removed: not installed
  EXPECT_FALSE(index->owner("/usr/include/zlib"));
  EXPECT_FALSE(index->owner("/usr/include/zlib.h.orig"));
  EXPECT_FALSE(index->owner("/"));
}

TEST(PackageIndex, TheIndexIsMadeOnceAndMadeAgainWhenTheDatabaseChanges)
{
  test::TempDir dir;
  write_database(dir / "dpkg");
  ASSERT_TRUE(PackageIndex::open(dir / "dpkg", dir / "cache"));
  auto again = PackageIndex::open(dir / "dpkg", dir / "cache");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->cached());
  EXPECT_EQ(again->owner("/usr/include/zconf.h")->package, "zheaders");
  // An upgrade rewrites the status file (another time, another size).
  test::write_file(dir / "dpkg/status",
                   "Package: zheaders\nStatus: install ok installed\nArchitecture: all\nVersion: 2.1-1\n");
  struct utimbuf later
  {
    2000000000, 2000000000
  };
  ASSERT_EQ(::utime((dir / "dpkg/status").c_str(), &later), 0);
  auto upgraded = PackageIndex::open(dir / "dpkg", dir / "cache");
  ASSERT_TRUE(upgraded) << upgraded.error().message;
  EXPECT_FALSE(upgraded->cached());
  EXPECT_EQ(upgraded->owner("/usr/include/zconf.h")->version, "2.1-1");
  EXPECT_FALSE(upgraded->owner("/usr/lib/x86_64-linux-gnu/libz.so.1.2.13")); // libz1 is not in this status
  // One index is kept: the earlier state's went.
  size_t indexes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "cache")) {
    indexes += entry.path().extension() == ".index" ? 1 : 0;
  }
  EXPECT_EQ(indexes, 1U);
}

TEST(PackageIndex, NoDatabaseFindsNothingAndAnUnwritableCacheStillAnswers)
{
  test::TempDir dir;
  auto none = PackageIndex::open(dir / "nothing", dir / "cache");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(none->owner("/usr/include/zlib.h"));
  write_database(dir / "dpkg");
  test::write_file(dir / "a-file", "");
  auto uncached = PackageIndex::open(dir / "dpkg", dir / "a-file/cache");
  ASSERT_TRUE(uncached) << uncached.error().message;
  EXPECT_EQ(uncached->owner("/usr/include/zlib.h")->package, "zheaders");
}

TEST(PackageIndex, TheIndexIsSortedByPathWithEachPathOnce)
{
  test::TempDir dir;
  write_database(dir / "dpkg");
  auto text = PackageIndex::make_index(dir / "dpkg");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text,
            "/lib\tlibz1\tamd64\t1:1.2.13.dfsg-1\n"
            "/lib/x86_64-linux-gnu\tlibz1\tamd64\t1:1.2.13.dfsg-1\n"
            "/lib/x86_64-linux-gnu/libz.so.1.2.13\tlibz1\tamd64\t1:1.2.13.dfsg-1\n"
            "/usr\tzheaders\tall\t2.0-1\n"
            "/usr/include\tzheaders\tall\t2.0-1\n"
            "/usr/include/zconf.h\tzheaders\tall\t2.0-1\n"
            "/usr/include/zlib.h\tzheaders\tall\t2.0-1\n"
            "/usr/share/doc/libz1/copyright\tlibz1\tamd64\t1:1.2.13.dfsg-1\n");
}

} // namespace
} // namespace fingerprint::query
