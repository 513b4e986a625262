#pragma once

#include <fingerprint/util/expected.hpp>

#include <string>
#include <string_view>

namespace fingerprint::util {

// Owns a file descriptor; closes it on destruction.
class Fd
{
public:
  Fd() = default;
  explicit Fd(int fd)
    : m_fd(fd)
  {
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept
    : m_fd(other.release())
  {
  }
  Fd& operator=(Fd&& other) noexcept;
  ~Fd();

  int
  get() const
  {
    return m_fd;
  }
  bool
  valid() const
  {
    return m_fd >= 0;
  }
  explicit operator bool() const { return valid(); }
  int release();
  void reset(int fd = -1);

private:
  int m_fd = -1;
};

// strerror(errno_value) as a std::string.
std::string errno_text(int errno_value);

// Writes all of `data`, retrying on EINTR and short writes.
Expected<void> write_all(int fd, std::string_view data);

// Reads from the current offset to end of file.
Expected<std::string> read_all(int fd);

// The whole of the regular file at `path`; the error names it and says why
// (missing, a directory, a FIFO: opened without blocking, so a FIFO left
// at the path does not wait for a writer).
Expected<std::string> read_regular_file(const std::string& path);

// Writes `text` to `path` through a temporary file beside it renamed over
// it, so that a reader sees the old file or the new one, never half of
// one; false (and no temporary file left) when it cannot.
bool replace_file(const std::string& path, std::string_view text);

} // namespace fingerprint::util
