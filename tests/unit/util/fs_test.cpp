#include <fingerprint/util/fs.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::util {
namespace {

using test::TempDir;

// Sets the process umask for one scope. The tests run one per process
// (gtest_discover_tests), and nothing else here creates files meanwhile.
class ScopedUmask
{
public:
  explicit ScopedUmask(mode_t mask)
    : m_old(::umask(mask))
  {
  }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;
  ~ScopedUmask() { ::umask(m_old); }

private:
  mode_t m_old;
};

struct stat
stat_of(const std::string& path)
{
  struct stat st
  {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

mode_t
mode_of(const std::string& path)
{
  return stat_of(path).st_mode & 07777;
}

// Fails when a created directory's mode is fixed in the code (0755, 0700)
// instead of being left to the umask: a group-shared store would lose its
// group write bit under umask 002.
TEST(Fs, NewDirectoriesGetTheirModeFromTheUmask)
{
  TempDir dir;
  {
    const ScopedUmask mask(002);
    ASSERT_TRUE(open_directory(dir / "a/b", true));
    auto base = open_directory(dir.path(), false);
    ASSERT_TRUE(base);
    auto beneath = open_directory_beneath(base->get(), "c/d", true);
    ASSERT_TRUE(beneath);
    ASSERT_TRUE(beneath->valid());
  }
  for (const char* name : {"a", "a/b", "c", "c/d"}) {
    EXPECT_EQ(mode_of(dir / name), 0775u) << name << " under umask 002";
  }
  {
    const ScopedUmask mask(022);
    ASSERT_TRUE(open_directory(dir / "e", true));
  }
  EXPECT_EQ(mode_of(dir / "e"), 0755u) << "under umask 022";
}

// Fails when the mode argument is ignored (the digest cache would be
// readable and writable by the group).
TEST(Fs, AnExplicitModeMakesAPrivateDirectory)
{
  TempDir dir;
  const ScopedUmask mask(002);
  ASSERT_TRUE(open_directory(dir / "private/cache", true, 0700));
  EXPECT_EQ(mode_of(dir / "private"), 0700u);
  EXPECT_EQ(mode_of(dir / "private/cache"), 0700u);
}

// In a setgid directory a new directory keeps the group and the setgid bit
// (a group-shared store). Fails when the code chmods what it made, or makes
// it elsewhere and renames it in. The group is changed to one other than
// the creator's only when running as root.
TEST(Fs, NewDirectoriesInASetgidDirectoryKeepItsGroupAndSetgidBit)
{
  TempDir dir;
  const std::string shared = dir / "shared";
  ASSERT_EQ(::mkdir(shared.c_str(), 0775), 0);
  const gid_t group = ::geteuid() == 0 ? 54321 : ::getegid();
  ASSERT_EQ(::chown(shared.c_str(), static_cast<uid_t>(-1), group), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 02775), 0);
  {
    const ScopedUmask mask(002);
    ASSERT_TRUE(open_directory(shared + "/a/b", true));
    auto base = open_directory(shared, false);
    ASSERT_TRUE(base);
    auto beneath = open_directory_beneath(base->get(), "objects/sha256/ab", true);
    ASSERT_TRUE(beneath);
    ASSERT_TRUE(beneath->valid());
  }
  for (const char* name : {"a", "a/b", "objects", "objects/sha256", "objects/sha256/ab"}) {
    const auto st = stat_of(shared + "/" + name);
    EXPECT_EQ(st.st_mode & 07777, 02775u) << name;
    EXPECT_EQ(st.st_gid, group) << name;
  }
}

// A directory beneath a store's root is opened whole (one openat2) or a
// component at a time; either way a symbolic link is refused, even one that
// stays beneath the root, and a missing directory is no error. Fails when
// the one-call path follows links (RESOLVE_BENEATH alone would take this
// one), or opens another directory than the walk would.
TEST(Fs, ADirectoryBeneathIsOpenedWithoutFollowingALink)
{
  TempDir dir;
  std::filesystem::create_directories(dir / "objects/sha256/ab");
  std::filesystem::create_directories(dir / "elsewhere");
  std::filesystem::create_directory_symlink("../../elsewhere", dir / "objects/sha256/cd");
  auto base = open_directory(dir.path(), false);
  ASSERT_TRUE(base);
  auto found = open_directory_beneath(base->get(), "objects/sha256/ab", false);
  ASSERT_TRUE(found);
  ASSERT_TRUE(found->valid());
  struct stat opened
  {};
  ASSERT_EQ(::fstat(found->get(), &opened), 0);
  EXPECT_EQ(opened.st_ino, stat_of(dir / "objects/sha256/ab").st_ino);
  auto linked = open_directory_beneath(base->get(), "objects/sha256/cd", false);
  ASSERT_FALSE(linked);
  EXPECT_NE(linked.error().message.find("symbolic links are not followed"), std::string::npos)
    << linked.error().message;
  auto missing = open_directory_beneath(base->get(), "objects/sha256/ef", false);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->valid());
}

// A log rebuilt through a temporary file by a user with umask 022 keeps the
// old log's group write bit (and group). Fails when the temporary file keeps
// the mode the umask gave it.
TEST(Fs, CopyAccessGivesTheNewFileTheOldOnesModeAndGroup)
{
  TempDir dir;
  const ScopedUmask mask(022);
  const std::string old_path = dir / "log.jsonl";
  const std::string new_path = dir / "log.jsonl.repair";
  const Fd old_fd(::open(old_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  const Fd new_fd(::open(new_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  ASSERT_TRUE(old_fd.valid());
  ASSERT_TRUE(new_fd.valid());
  ASSERT_EQ(::fchmod(old_fd.get(), 0664), 0);
  const gid_t group = ::geteuid() == 0 ? 54321 : ::getegid();
  ASSERT_EQ(::fchown(old_fd.get(), static_cast<uid_t>(-1), group), 0);
  ASSERT_EQ(mode_of(new_path), 0644u) << "the umask applies to the new file";
  ASSERT_TRUE(copy_access(old_fd.get(), new_fd.get()));
  EXPECT_EQ(mode_of(new_path), 0664u);
  EXPECT_EQ(stat_of(new_path).st_gid, group);
  // Never more than the 0777 bits: a set-id bit on the old file is not copied.
  ASSERT_EQ(::fchmod(old_fd.get(), 04640), 0);
  ASSERT_TRUE(copy_access(old_fd.get(), new_fd.get()));
  EXPECT_EQ(mode_of(new_path), 0640u);
}

} // namespace
} // namespace fingerprint::util

namespace fingerprint::util {
namespace {

// The fast path for paths that are normal already must give what the
// normalizing path gives for every other shape.
TEST(AbsolutePath, NormalPathsAreKeptAndOthersNormalized)
{
  EXPECT_EQ(absolute_path("/usr/include/c++/12/string"), "/usr/include/c++/12/string");
  EXPECT_EQ(absolute_path("/"), "/");
  EXPECT_EQ(absolute_path("/a/.hidden/..."), "/a/.hidden/...");
  EXPECT_EQ(absolute_path("/a/b/../c"), "/a/c");
  EXPECT_EQ(absolute_path("/a/./b"), "/a/b");
  EXPECT_EQ(absolute_path("/a//b"), "/a/b");
  EXPECT_EQ(absolute_path("/a/b/."), "/a/b");
  EXPECT_EQ(absolute_path("/a/b/.."), "/a");
  EXPECT_EQ(absolute_path("/a/b/"), "/a/b");
  EXPECT_EQ(absolute_path("b/c"), std::filesystem::current_path().string() + "/b/c");
  // What a linker's dependency file says, and what lexically_normal makes
  // of the rest.
  EXPECT_EQ(absolute_path("/usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/Scrt1.o"),
            "/usr/lib/x86_64-linux-gnu/Scrt1.o");
  for (const std::string odd : {"/..",
                                "/../a",
                                "/a/../..",
                                "//a//b//",
                                "/a/./../b/.",
                                "/a/b/c/../../d/..",
                                "/.a/..b/...",
                                "a/../../b",
                                "./a/./b/..",
                                "..",
                                ".",
                                "a/..",
                                "/a/b/../../../../c"}) {
    std::string expected = std::filesystem::absolute(odd).lexically_normal().string();
    if (expected.size() > 1 && expected.back() == '/') {
      expected.pop_back();
    }
    EXPECT_EQ(absolute_path(odd), expected) << odd;
  }
}

} // namespace
} // namespace fingerprint::util
