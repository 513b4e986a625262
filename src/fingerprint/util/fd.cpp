#include <fingerprint/util/fd.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
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
