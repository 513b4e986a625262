#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fingerprint::test {

// A fresh directory per test, removed when the test passed and kept (with
// its path printed) when it failed, so the evidence survives.
class TempDir
{
public:
  TempDir()
  {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/fingerprint-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    m_path = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir()
  {
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "kept the test directory %s\n", m_path.c_str());
      return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(m_path, ignored);
  }

  const std::string&
  path() const
  {
    return m_path;
  }
  std::string
  operator/(const std::string& name) const
  {
    return m_path + "/" + name;
  }

private:
  std::string m_path;
};

inline void
write_file(const std::string& path, const std::string& content)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

inline std::string
read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Deterministic bytes that are not a repeating power-of-two pattern.
inline std::string
pattern_bytes(size_t size)
{
  std::string bytes(size, '\0');
  uint32_t state = 2463534242u;
  for (auto& byte : bytes) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    byte = static_cast<char>(state & 0xff);
  }
  return bytes;
}

} // namespace fingerprint::test
