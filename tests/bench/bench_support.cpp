#include "bench_support.hpp"

#include <fingerprint/util/fd.hpp>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace fingerprint::bench {

namespace {

[[noreturn]] void
fail(const std::string& what, int errno_value)
{
  throw std::runtime_error(what + ": " + util::errno_text(errno_value));
}

} // namespace

ScratchDir::ScratchDir()
{
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = (tmpdir != nullptr && *tmpdir != '\0') ? tmpdir : "/tmp";
  pattern += "/fingerprint-bench.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    fail(pattern, errno);
  }
  m_path = buffer.data();
}

ScratchDir::~ScratchDir()
{
  std::error_code ignored;
  std::filesystem::remove_all(m_path, ignored);
}

const std::string&
ScratchDir::hot_file(uint64_t size)
{
  if (auto found = m_files.find(size); found != m_files.end()) {
    return found->second;
  }
  const std::string path = m_path + "/hot-" + std::to_string(size);
  util::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) {
    fail(path, errno);
  }
  constexpr size_t k_chunk = 1024 * 1024;
  const std::string chunk = pseudo_random_bytes(k_chunk, size);
  for (uint64_t written = 0; written < size; written += k_chunk) {
    const auto length = static_cast<size_t>(std::min<uint64_t>(k_chunk, size - written));
    if (auto ok = util::write_all(fd.get(), std::string_view(chunk).substr(0, length)); !ok) {
      throw std::runtime_error(path + ": " + ok.error().message);
    }
  }
  // Clean pages: write-back of dirty ones would otherwise land in the middle
  // of a measurement.
  if (::fdatasync(fd.get()) != 0) {
    fail(path, errno);
  }
  fd.reset();
  if (read_file(path).size() != size) {
    throw std::runtime_error(path + ": short file");
  }
  return m_files.emplace(size, path).first->second;
}

std::string
pseudo_random_bytes(size_t size, uint64_t seed)
{
  std::string bytes(size, '\0');
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (size_t i = 0; i < size; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    bytes[i] = static_cast<char>(state >> 56);
  }
  return bytes;
}

std::string
read_file(const std::string& path)
{
  util::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    fail(path, errno);
  }
  auto text = util::read_all(fd.get());
  if (!text) {
    throw std::runtime_error(path + ": " + text.error().message);
  }
  return std::move(*text);
}

} // namespace fingerprint::bench
