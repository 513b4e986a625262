#include <fingerprint/hook/ninja_deps.hpp>
#include <fingerprint/util/fd.hpp>

#include <cstring>

namespace fingerprint::hook {

namespace {

constexpr std::string_view k_signature = "# ninjadeps\n";
constexpr uint32_t k_version = 4;
constexpr uint32_t k_deps_flag = 0x8000'0000U;

uint32_t
word_at(const char* bytes)
{
  uint32_t value = 0;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

} // namespace

Expected<NinjaDepsLog>
NinjaDepsLog::parse(std::string bytes)
{
  if (bytes.size() < k_signature.size() + 4 || std::string_view(bytes).substr(0, k_signature.size()) != k_signature) {
    return Error{"not a Ninja deps log (no \"# ninjadeps\" header)"};
  }
  if (const uint32_t version = word_at(bytes.data() + k_signature.size()); version != k_version) {
    return Error{"Ninja deps log version " + std::to_string(version) + ", this reader knows version "
                 + std::to_string(k_version) + " (Ninja 1.10 and later)"};
  }
  NinjaDepsLog log;
  log.m_consumed = k_signature.size() + 4;
  log.read_records(std::move(bytes), log.m_consumed); // the header kept in the chunk, not moved out of it
  return log;
}

void
NinjaDepsLog::extend(std::string more)
{
  read_records(std::move(more), 0);
}

void
NinjaDepsLog::read_records(std::string chunk, size_t from)
{
  if (m_ended || chunk.size() <= from) {
    return;
  }
  const std::string& b = *m_chunks.emplace_back(std::make_unique<const std::string>(std::move(chunk)));
  size_t offset = from;
  while (offset + 4 <= b.size()) {
    const uint32_t head = word_at(b.data() + offset);
    const size_t size = head & ~k_deps_flag;
    const size_t body = offset + 4;
    if (size % 4 != 0 || body + size > b.size()) {
      m_ended = size % 4 != 0;
      break; // cut short: the rest was never written whole (yet)
    }
    if ((head & k_deps_flag) != 0) {
      const uint32_t output = size >= 12 ? word_at(b.data() + body) : ~0U;
      const size_t count = size >= 12 ? (size - 12) / 4 : 0;
      bool known = output < m_paths.size();
      for (size_t i = 0; known && i < count; ++i) {
        known = word_at(b.data() + body + 12 + 4 * i) < m_paths.size();
      }
      if (!known) {
        m_ended = true; // ids are written before they are used: anything else is damage
        break;
      }
      const uint64_t mtime = word_at(b.data() + body + 4) | (uint64_t{word_at(b.data() + body + 8)} << 32);
      m_deps[output] = {b.data() + body + 12, count, static_cast<int64_t>(mtime)};
    } else {
      const auto id = static_cast<uint32_t>(m_paths.size());
      if (size < 4 || word_at(b.data() + body + size - 4) != ~id) {
        m_ended = true; // the checksum Ninja writes: a record from a torn write
        break;
      }
      size_t length = size - 4;
      while (length > 0 && b[body + length - 1] == '\0') {
        --length;
      }
      const std::string_view path(b.data() + body, length);
      m_paths.push_back(path);
      m_ids.emplace(path, id);
    }
    offset = body + size;
  }
  if (offset == from) {
    m_chunks.pop_back(); // nothing of it read: not kept for the next call to read again
  }
  m_consumed += offset - from;
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
    inputs.emplace_back(m_paths[word_at(deps->ids + 4 * i)]);
  }
  return inputs;
}

} // namespace fingerprint::hook
