#include <fingerprint/util/elf.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/text.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::util {

namespace {

constexpr uint32_t k_pt_note = 4;
constexpr uint32_t k_sht_note = 7;
constexpr uint32_t k_nt_gnu_build_id = 3;
// Larger note areas are not a toolchain's: a damaged or hostile header.
constexpr uint64_t k_max_notes = 1 << 20;

class Reader
{
public:
  Reader(int fd, uint64_t size, bool big_endian)
    : m_fd(fd)
    , m_size(size)
    , m_big(big_endian)
  {
  }

  // `size` bytes at `offset`, or nothing when the file does not hold them.
  std::optional<std::string>
  bytes(uint64_t offset, uint64_t size) const
  {
    if (offset > m_size || size > m_size - offset || size > k_max_notes) {
      return std::nullopt;
    }
    std::string out(size, '\0');
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(m_fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
      if (n <= 0) {
        return std::nullopt;
      }
      done += static_cast<size_t>(n);
    }
    return out;
  }

  uint64_t
  number(std::string_view in, size_t at, size_t width) const
  {
    uint64_t value = 0;
    for (size_t i = 0; i < width; ++i) {
      const auto byte = static_cast<unsigned char>(in[at + (m_big ? i : width - 1 - i)]);
      value = value << 8 | byte;
    }
    return value;
  }

private:
  int m_fd;
  uint64_t m_size;
  bool m_big;
};

// The build-id among the notes in `notes`.
std::optional<std::string>
build_id_in(const Reader& reader, std::string_view notes)
{
  size_t at = 0;
  auto padded = [](uint64_t n) { return (n + 3) & ~uint64_t{3}; };
  while (notes.size() - at >= 12) {
    const uint64_t name_size = reader.number(notes, at, 4);
    const uint64_t desc_size = reader.number(notes, at + 4, 4);
    const uint64_t type = reader.number(notes, at + 8, 4);
    at += 12;
    if (padded(name_size) > notes.size() - at || padded(desc_size) > notes.size() - at - padded(name_size)) {
      return std::nullopt;
    }
    const std::string_view name = notes.substr(at, name_size);
    at += padded(name_size);
    if (type == k_nt_gnu_build_id && name == std::string_view("GNU\0", 4) && desc_size > 0) {
      return to_hex(reinterpret_cast<const unsigned char*>(notes.data() + at), desc_size);
    }
    at += padded(desc_size);
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string>
gnu_build_id(const std::string& path)
{
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st
  {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  char ident[64] = {};
  if (::pread(fd.get(), ident, sizeof(ident), 0) != static_cast<ssize_t>(sizeof(ident))
      || std::string_view(ident, 4)
           != "\x7f"
              "ELF"
      || (ident[4] != 1 && ident[4] != 2) || (ident[5] != 1 && ident[5] != 2)) {
    return std::nullopt;
  }
  const bool wide = ident[4] == 2;
  const Reader reader(fd.get(), static_cast<uint64_t>(st.st_size), ident[5] == 2);
  const std::string_view header(ident, sizeof(ident));
  const size_t word = wide ? 8 : 4;
  // The program headers' PT_NOTE segments (kept by strip), then the
  // sections' SHT_NOTE ones (what a debug file split off has).
  struct Table
  {
    uint64_t offset, entry_size, count;
    uint32_t kind;
    size_t type_at, offset_at, size_at;
  };
  const Table tables[] = {
    {reader.number(header, wide ? 32 : 28, word),
     reader.number(header, wide ? 54 : 42, 2),
     reader.number(header, wide ? 56 : 44, 2),
     k_pt_note,
     0,
     wide ? 8U : 4U,
     wide ? 32U : 16U},
    {reader.number(header, wide ? 40 : 32, word),
     reader.number(header, wide ? 58 : 46, 2),
     reader.number(header, wide ? 60 : 48, 2),
     k_sht_note,
     4,
     wide ? 24U : 16U,
     wide ? 32U : 20U},
  };
  for (const Table& table : tables) {
    if (table.offset == 0 || table.entry_size < table.size_at + word) {
      continue;
    }
    const auto entries = reader.bytes(table.offset, table.entry_size * table.count);
    if (!entries) {
      continue;
    }
    for (uint64_t i = 0; i < table.count; ++i) {
      const size_t at = static_cast<size_t>(i * table.entry_size);
      if (reader.number(*entries, at + table.type_at, 4) != table.kind) {
        continue;
      }
      const auto notes = reader.bytes(reader.number(*entries, at + table.offset_at, word),
                                      reader.number(*entries, at + table.size_at, word));
      if (notes) {
        if (auto id = build_id_in(reader, *notes)) {
          return id;
        }
      }
    }
  }
  return std::nullopt;
}

} // namespace fingerprint::util
