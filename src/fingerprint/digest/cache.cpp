#include <fingerprint/digest/cache.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace fingerprint::digest {

namespace {

constexpr int64_t k_second_ns = 1'000'000'000;
constexpr long k_msdos_magic = 0x4d44;
constexpr long k_exfat_magic = 0x2011BAB0;
constexpr long k_nfs_magic = 0x6969;
constexpr long k_smb2_magic = static_cast<long>(0xFE534D42);
constexpr long k_cifs_magic = static_cast<long>(0xFF534D42);

} // namespace

DigestCache::DigestCache(std::string directory)
  : m_directory(std::move(directory))
{
}

std::string
DigestCache::default_directory()
{
  if (const char* dir = std::getenv("FINGERPRINT_CACHE_DIR")) {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/fingerprint";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/fingerprint";
  }
  return {};
}

bool
DigestCache::is_trustworthy(const FileIdentity& identity, int64_t read_at_ns, int64_t granularity_ns)
{
  const int64_t last_change = std::max(identity.mtime_ns, identity.ctime_ns);
  return read_at_ns - last_change >= granularity_ns;
}

int64_t
DigestCache::granularity_ns(int fd, const FileIdentity& identity)
{
  struct statfs fs
  {};
  if (::fstatfs(fd, &fs) == 0) {
    const auto type = static_cast<long>(fs.f_type);
    if (type == k_msdos_magic || type == k_exfat_magic) {
      return 2 * k_second_ns;
    }
    if (type == k_nfs_magic || type == k_smb2_magic || type == k_cifs_magic) {
      return k_second_ns; // the server's clock and granularity are unknown
    }
  }
  if (identity.mtime_ns % k_second_ns == 0 && identity.ctime_ns % k_second_ns == 0) {
    return k_second_ns;
  }
  timespec res{};
  if (::clock_getres(CLOCK_REALTIME_COARSE, &res) != 0) {
    return k_second_ns;
  }
  return std::max<int64_t>(int64_t{res.tv_sec} * k_second_ns + res.tv_nsec, 1);
}

std::string
DigestCache::entry_path(Algorithm algorithm, const FileIdentity& identity) const
{
  // "/<inode's low byte>/<device>-<inode>", in hex. By std::to_chars:
  // snprintf took a tenth of a link hook's instructions here.
  char name[80];
  char* out = name;
  const auto hex = [&out](uint64_t value, long min_digits) {
    char digits[16]; // any uint64_t
    char* end = std::to_chars(digits, digits + sizeof(digits), value, 16).ptr;
    for (auto length = end - digits; length < min_digits; ++length) {
      *out++ = '0';
    }
    out = std::copy(digits, end, out);
  };
  *out++ = '/';
  hex(identity.inode & 0xff, 2);
  *out++ = '/';
  hex(identity.device, 1);
  *out++ = '-';
  hex(identity.inode, 1);
  *out = '\0';
  return m_directory + "/digests/" + std::string(algorithm_name(algorithm)) + name;
}

std::optional<std::string>
DigestCache::lookup(Algorithm algorithm, const FileIdentity& identity) const
{
  if (!enabled()) {
    return std::nullopt;
  }
  util::Fd fd(::open(entry_path(algorithm, identity).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    return std::nullopt;
  }
  // An entry is taken for the file's digest unread, so it must be this
  // user's own: one another user wrote (a cache directory shared through an
  // inherited $FINGERPRINT_CACHE_DIR) could name any digest for our files.
  struct stat st
  {};
  static const uid_t k_euid = ::geteuid();
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != k_euid) {
    return std::nullopt;
  }
  char buffer[512];
  const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer) - 1);
  if (n <= 0) {
    return std::nullopt;
  }
  // "<size> <mtime ns> <ctime ns> <hex>\n", as store() writes it.
  std::string_view rest(buffer, static_cast<size_t>(n));
  auto number = [&rest](auto& value) {
    auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (error != std::errc() || end == rest.data() + rest.size() || *end != ' ') {
      return false;
    }
    rest.remove_prefix(static_cast<size_t>(end - rest.data()) + 1);
    return true;
  };
  uint64_t size = 0;
  int64_t mtime = 0;
  int64_t ctime = 0;
  if (!number(size) || !number(mtime) || !number(ctime)) {
    return std::nullopt;
  }
  if (rest.ends_with('\n')) {
    rest.remove_suffix(1);
  }
  if (size != identity.size || mtime != identity.mtime_ns || ctime != identity.ctime_ns
      || !util::is_lower_hex(rest, 2 * digest_size(algorithm))) {
    return std::nullopt;
  }
  return std::string(rest);
}

void
DigestCache::store(Algorithm algorithm,
                   const FileIdentity& identity,
                   const std::string& hex,
                   int64_t read_at_ns,
                   int64_t granularity_ns) const
{
  if (!enabled() || !is_trustworthy(identity, read_at_ns, granularity_ns)) {
    return;
  }
  const std::string path = entry_path(algorithm, identity);
  const auto [dir, name] = util::split_last(path);
  // Private (0700, entries 0600): a cache is one user's, never shared, so
  // another user's runs neither write into it nor read from it.
  auto dir_fd = util::open_directory(std::string(dir), true, 0700);
  if (!dir_fd) {
    return; // an unwritable cache only costs time
  }
  char line[256];
  const int length = std::snprintf(line,
                                   sizeof(line),
                                   "%" PRIu64 " %" PRId64 " %" PRId64 " %s\n",
                                   identity.size,
                                   identity.mtime_ns,
                                   identity.ctime_ns,
                                   hex.c_str());
  const std::string temp =
    std::string(name) + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(util::now_ns());
  util::Fd fd(::openat(dir_fd->get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    return;
  }
  const bool written = length > 0 && util::write_all(fd.get(), std::string_view(line, static_cast<size_t>(length)));
  fd.reset();
  if (!written || ::renameat(dir_fd->get(), temp.c_str(), dir_fd->get(), std::string(name).c_str()) != 0) {
    ::unlinkat(dir_fd->get(), temp.c_str(), 0);
  }
}

} // namespace fingerprint::digest
