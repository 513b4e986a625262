#include <fingerprint/hook/ninja_deps.hpp>
#include <fingerprint/util/fd.hpp>

#include <cstring>

namespace fingerprint::hook {

namespace {

constexpr std::string_view k_signature = "# ninjadeps\n";
constexpr uint32_t k_version = 4;
constexpr uint32_t k_deps_flag = 0x8000'0000U;

uint32_t
word_at(const std::string& bytes, size_t offset)
{
  uint32_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

} // namespace

Expected<NinjaDepsLog>
NinjaDepsLog::parse(std::string bytes)
{
  NinjaDepsLog log;
  log.m_bytes = std::make_unique<const std::string>(std::move(bytes));
  const std::string& b = *log.m_bytes;
  if (b.size() < k_signature.size() + 4 || std::string_view(b).substr(0, k_signature.size()) != k_signature) {
    return Error{"not a Ninja deps log (no \"# ninjadeps\" header)"};
  }
  if (const uint32_t version = word_at(b, k_signature.size()); version != k_version) {
    return Error{"Ninja deps log version " + std::to_string(version) + ", this reader knows version "
                 + std::to_string(k_version) + " (Ninja 1.10 and later)"};
  }
  size_t offset = k_signature.size() + 4;
  while (offset + 4 <= b.size()) {
    const uint32_t head = word_at(b, offset);
    const size_t size = head & ~k_deps_flag;
    const size_t body = offset + 4;
    if (size % 4 != 0 || body + size > b.size()) {
      break; // cut short: the rest was never written whole
    }
    if ((head & k_deps_flag) != 0) {
      if (size < 12) {
        break;
      }
      const uint32_t output = word_at(b, body);
      const size_t count = (size - 12) / 4;
      bool known = output < log.m_paths.size();
      for (size_t i = 0; known && i < count; ++i) {
        known = word_at(b, body + 12 + 4 * i) < log.m_paths.size();
      }
      if (!known) {
        break; // ids are written before they are used: anything else is damage
      }
      const uint64_t mtime = word_at(b, body + 4) | (uint64_t{word_at(b, body + 8)} << 32);
      log.m_deps[output] = {body + 12, count, static_cast<int64_t>(mtime)};
    } else {
      if (size < 4) {
        break;
      }
      size_t length = size - 4;
      while (length > 0 && b[body + length - 1] == '\0') {
        --length;
      }
      const auto id = static_cast<uint32_t>(log.m_paths.size());
      if (word_at(b, body + size - 4) != ~id) {
        break; // the checksum Ninja writes: a record from a torn write
      }
      const std::string_view path(b.data() + body, length);
      log.m_paths.push_back(path);
      log.m_ids.emplace(path, id);
    }
    offset = body + size;
  }
  return log;
}

Expected<NinjaDepsLog>
NinjaDepsLog::read(const std::string& path)
{
  auto bytes = util::read_regular_file(path);
  if (!bytes) {
    return bytes.error();
  }
  auto log = parse(std::move(*bytes));
  if (!log) {
    return make_error(path, log.error().message);
  }
  return log;
}

const NinjaDepsLog::Deps*
NinjaDepsLog::find(std::string_view output) const
{
  const auto id = m_ids.find(output);
  if (id == m_ids.end()) {
    return nullptr;
  }
  const auto deps = m_deps.find(id->second);
  return deps == m_deps.end() ? nullptr : &deps->second;
}

std::optional<int64_t>
NinjaDepsLog::mtime_of(std::string_view output) const
{
  const Deps* deps = find(output);
  return deps != nullptr ? std::optional(deps->mtime) : std::nullopt;
}

std::vector<std::string>
NinjaDepsLog::inputs_of(std::string_view output) const
{
  std::vector<std::string> inputs;
  const Deps* deps = find(output);
  if (deps == nullptr) {
    return inputs;
  }
  inputs.reserve(deps->count);
  for (size_t i = 0; i < deps->count; ++i) {
    inputs.emplace_back(m_paths[word_at(*m_bytes, deps->offset + 4 * i)]);
  }
  return inputs;
}

} // namespace fingerprint::hook
