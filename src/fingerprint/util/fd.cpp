#include <fingerprint/util/fd.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::util {

Fd&
Fd::operator=(Fd&& other) noexcept
{
  if (this != &other) {
    reset(other.release());
  }
  return *this;
}

Fd::~Fd()
{
  reset();
}

int
Fd::release()
{
  const int fd = m_fd;
  m_fd = -1;
  return fd;
}

void
Fd::reset(int fd)
{
  if (m_fd >= 0) {
    // Linux always releases the descriptor, even when close() reports EINTR,
    // so retrying would close someone else's descriptor.
    ::close(m_fd);
  }
  m_fd = fd;
}

std::string
errno_text(int errno_value)
{
  return std::strerror(errno_value);
}

Expected<void>
write_all(int fd, std::string_view data)
{
  while (!data.empty()) {
    const ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{errno_text(errno)};
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  return {};
}

Expected<std::string>
read_regular_file(const std::string& path)
{
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return make_error(path, errno_text(errno));
  }
  struct stat st
  {};
  if (::fstat(fd.get(), &st) != 0) {
    return make_error(path, errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(path,
                      S_ISDIR(st.st_mode)    ? "is a directory, not a regular file"
                      : S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO)"
                                             : "not a regular file");
  }
  auto text = read_all(fd.get());
  if (!text) {
    return make_error(path, text.error().message);
  }
  return text;
}

bool
replace_file(const std::string& path, std::string_view text)
{
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (!fd) {
    return false;
  }
  const bool written = static_cast<bool>(write_all(fd.get(), text));
  fd.reset();
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

Expected<std::string>
read_all(int fd)
{
  // Read straight into the string, sized from fstat when the descriptor is
  // a file, so a large log is not copied through a bounce buffer and
  // reallocated as it grows.
  std::string result;
  struct stat st
  {};
  size_t capacity = 65536;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    capacity = static_cast<size_t>(st.st_size) + 1; // +1 sees end of file in one call
  }
  size_t used = 0;
  while (true) {
    if (used == result.size()) {
      result.resize(std::max(capacity, result.size() * 2));
    }
    const ssize_t n = ::read(fd, result.data() + used, result.size() - used);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{errno_text(errno)};
    }
    if (n == 0) {
      result.resize(used);
      return result;
    }
    used += static_cast<size_t>(n);
  }
}

} // namespace fingerprint::util
