#include <fingerprint/util/fs.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fingerprint::util {

namespace {

constexpr int k_dir_flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

constexpr mode_t k_umask_decides = 0777;

Expected<Fd>
open_or_make(int base_fd, const std::string& name, bool create, int extra_flags, mode_t mode)
{
  for (int attempt = 0; attempt < 2; ++attempt) {
    Fd fd(::openat(base_fd, name.c_str(), k_dir_flags | extra_flags));
    if (fd) {
      return fd;
    }
    if (errno == ENOENT && !create) {
      return Fd(); // missing: the caller decides
    }
    if (errno != ENOENT) {
      if ((extra_flags & O_NOFOLLOW) != 0 && (errno == ELOOP || errno == ENOTDIR)) {
        return make_error(name, "not a directory (symbolic links are not followed inside the store)");
      }
      return make_error(name, errno_text(errno));
    }
    // Another process may make it first; EEXIST is success. No chmod after:
    // it would need the umask (racy to read) and could drop the setgid bit.
    if (::mkdirat(base_fd, name.c_str(), mode) != 0 && errno != EEXIST) {
      return make_error(name, errno_text(errno));
    }
  }
  return make_error(name, "directory vanished while being created");
}

} // namespace

bool
is_safe_component(std::string_view name)
{
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos
         && name.find('\0') == std::string_view::npos;
}

std::string
absolute_path(const std::string& path)
{
  // Most paths are normal already (a compiler's dependency file names a
  // hundred headers a compile): std::filesystem's normalizing is what costs.
  const auto normal_already = [&path] {
    if (!path.starts_with('/') || (path.size() > 1 && path.back() == '/')) {
      return false;
    }
    for (size_t slash = 0; slash != std::string::npos; slash = path.find('/', slash + 1)) {
      const std::string_view next = std::string_view(path).substr(slash + 1, 3);
      if (next.starts_with('/') || next == "." || next == ".." || next.starts_with("./") || next.starts_with("../")) {
        return false;
      }
    }
    return true;
  };
  if (normal_already()) {
    return path;
  }
  // The rest, lexically as std::filesystem's lexically_normal does it, in
  // one pass and one string: its path objects cost some forty allocations
  // a path, and a linker's dependency file names every library as
  // /usr/lib/gcc/x86_64-linux-gnu/12/../../../x86_64-linux-gnu/libc.so.
  std::string joined;
  if (!path.starts_with('/')) {
    std::error_code error;
    joined = std::filesystem::current_path(error).string();
    if (error) {
      return path;
    }
    joined += '/';
  }
  joined += path;
  std::string normal;
  normal.reserve(joined.size());
  for (size_t start = 0; start < joined.size();) {
    size_t end = joined.find('/', start);
    if (end == std::string::npos) {
      end = joined.size();
    }
    const std::string_view component(joined.data() + start, end - start);
    if (component == "..") {
      normal.resize(std::min(normal.rfind('/'), normal.size())); // "/.." is "/" (empty, made "/" below)
    } else if (!component.empty() && component != ".") {
      normal += '/';
      normal += component;
    }
    start = end + 1;
  }
  return normal.empty() ? "/" : normal;
}

std::vector<std::string>
sorted_entries(const std::string& dir)
{
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") {
        names.emplace_back(name);
      }
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string
base_name(const std::string& path)
{
  return std::filesystem::path(path).filename().string();
}

std::pair<std::string_view, std::string_view>
split_last(std::string_view relative)
{
  const auto slash = relative.rfind('/');
  if (slash == std::string_view::npos) {
    return {std::string_view(), relative};
  }
  return {relative.substr(0, slash), relative.substr(slash + 1)};
}

Expected<Fd>
open_directory(const std::string& path, bool create, mode_t mode)
{
  Fd fd(::open(path.c_str(), k_dir_flags));
  if (fd) {
    return fd;
  }
  if (errno != ENOENT || !create) {
    return make_error(path, errno_text(errno));
  }
  // mkdir -p, walking from the root or the current directory.
  const bool absolute = !path.empty() && path.front() == '/';
  Fd current(::open(absolute ? "/" : ".", k_dir_flags));
  if (!current) {
    return make_error(path, errno_text(errno));
  }
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    if (end > start) {
      auto next = open_or_make(current.get(), path.substr(start, end - start), true, 0, mode);
      if (!next) {
        return make_error(path, next.error().message);
      }
      current = std::move(*next);
    }
    start = end + 1;
  }
  return current;
}

Expected<Fd>
open_directory_beneath(int base_fd, std::string_view relative, bool create)
{
  // Most calls find every component there: one openat2 that follows no
  // symbolic link and stays beneath, the walk below in one system call
  // instead of two a component (a hook opens five such directories a
  // link). Anything else, the kernel's refusal included, takes the walk,
  // which makes what is missing and says which component is wrong.
  if (!relative.empty() && relative.size() < PATH_MAX) {
    bool safe = true;
    for (size_t start = 0; safe && start <= relative.size();) {
      const size_t end = std::min(relative.find('/', start), relative.size());
      safe = is_safe_component(relative.substr(start, end - start));
      start = end + 1;
    }
    if (safe) {
      open_how how{};
      how.flags = k_dir_flags;
      how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
      const std::string path(relative);
      if (const long fd = ::syscall(SYS_openat2, base_fd, path.c_str(), &how, sizeof how); fd >= 0) {
        return Fd(static_cast<int>(fd));
      }
    }
  }
  Fd current(::fcntl(base_fd, F_DUPFD_CLOEXEC, 0));
  if (!current) {
    return Error{errno_text(errno)};
  }
  size_t start = 0;
  while (start < relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string_view::npos) {
      end = relative.size();
    }
    const std::string_view name = relative.substr(start, end - start);
    if (!is_safe_component(name)) {
      return make_error(std::string(relative), "unsafe path component");
    }
    auto next = open_or_make(current.get(), std::string(name), create, O_NOFOLLOW, k_umask_decides);
    if (!next) {
      return make_error(std::string(relative), next.error().message);
    }
    if (!next->valid()) {
      return next;
    }
    current = std::move(*next);
    start = end + 1;
  }
  return current;
}

Expected<void>
copy_access(int from_fd, int to_fd)
{
  struct stat from
  {};
  struct stat to
  {};
  if (::fstat(from_fd, &from) != 0 || ::fstat(to_fd, &to) != 0) {
    return Error{errno_text(errno)};
  }
  if (to.st_gid != from.st_gid) {
    (void)::fchown(to_fd, static_cast<uid_t>(-1), from.st_gid); // EPERM: not a member
  }
  // After the fchown, which may clear set-id bits; only the 0777 ones are kept.
  if (::fchmod(to_fd, from.st_mode & 0777) != 0) {
    return Error{errno_text(errno)};
  }
  return {};
}

Expected<void>
fsync_directory(int dir_fd)
{
  if (::fsync(dir_fd) != 0) {
    return Error{errno_text(errno)};
  }
  return {};
}

} // namespace fingerprint::util
