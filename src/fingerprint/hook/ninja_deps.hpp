#pragma once

// Ninja's deps log (`.ninja_deps` in the build tree): what each compile
// read, as Ninja took it from the compiler's dependency file before it
// deleted that file. Read rather than asked of `ninja -t deps`, which loads
// the whole build manifest first.
//
// The format (Ninja 1.10 and later, version 4): the header "# ninjadeps\n"
// and a 4-byte version, then records, each a 4-byte word whose high bit
// says which kind and whose other 31 bits give the size of what follows.
// A path record is the path, padded with NULs to a multiple of 4, and the
// one's complement of its id (ids count path records from 0). A deps
// record is the output's id, its mtime (8 bytes) and the input ids. A later
// deps record of an output replaces an earlier one. Integers are in the
// machine's byte order.

#include <fingerprint/util/expected.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fingerprint::hook {

class NinjaDepsLog
{
public:
  // Parses the bytes of a deps log. A record cut short or failing its
  // checksum ends the log there, as Ninja itself treats it (a build killed
  // while writing leaves one); a wrong header or version is an error.
  static Expected<NinjaDepsLog> parse(std::string bytes);

  // Reads and parses the file at `path`.
  static Expected<NinjaDepsLog> read(const std::string& path);

  // Parses what Ninja appended since: `more` is the file's bytes from
  // consumed() on. A record still cut short at the end is left for the
  // next call; after damage nothing more is read.
  void extend(std::string more);

  // Whether damage ended the log (Ninja cuts such a log short and appends
  // anew: a reader that wants what follows reads the file again).
  bool
  ended() const
  {
    return m_ended;
  }

  // How many bytes of the file the records read so far take.
  size_t
  consumed() const
  {
    return m_consumed;
  }

  // The inputs recorded for `output`, named as Ninja names it (relative to
  // the build tree, or absolute); empty when it has none.
  std::vector<std::string> inputs_of(std::string_view output) const;

  // The mtime (nanoseconds) `output` had when its inputs were recorded: a
  // record is only the output's own while the two agree.
  std::optional<int64_t> mtime_of(std::string_view output) const;

  size_t
  path_count() const
  {
    return m_paths.size();
  }

  size_t
  output_count() const
  {
    return m_deps.size();
  }

private:
  struct Deps
  {
    const char* ids = nullptr; // the first input id, in one of m_chunks
    size_t count = 0;
    int64_t mtime = 0;
  };

  const Deps* find(std::string_view output) const;
  // Reads the records of `chunk` from byte `from` on (extend's work; parse
  // starts past the header).
  void read_records(std::string chunk, size_t from);

  // The file's bytes as read, a chunk a read: the views and pointers into
  // them survive moving the log and reading on.
  std::vector<std::unique_ptr<const std::string>> m_chunks;
  std::vector<std::string_view> m_paths; // by id
  std::unordered_map<std::string_view, uint32_t> m_ids;
  std::unordered_map<uint32_t, Deps> m_deps; // by output id
  size_t m_consumed = 0;
  bool m_ended = false; // damage: nothing after it is the log's
};

} // namespace fingerprint::hook
