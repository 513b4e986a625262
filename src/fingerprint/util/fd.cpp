#include <fingerprint/util/fd.hpp>

#include <cerrno>
#include <cstring>
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
  std::string result;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{errno_text(errno)};
    }
    if (n == 0) {
      return result;
    }
    result.append(buffer, static_cast<size_t>(n));
  }
}

} // namespace fingerprint::util
