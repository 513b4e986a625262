#include <fingerprint/store/input_journal.hpp>
#include <fingerprint/util/text.hpp>

#include <unordered_set>

namespace fingerprint::store {

std::string
journal_line(const DigestKey& key, const Manifest& manifest)
{
  std::string line = reverse_line(key);
  line.reserve((manifest.entries.size() + 1) * (line.size() + 2));
  // An input read at two paths, or in two roles, is indexed once.
  std::unordered_set<std::string_view> seen;
  seen.reserve(manifest.entries.size());
  for (const ManifestEntry& entry : manifest.entries) {
    if (seen.insert(entry.hex).second) {
      line += reverse_line(DigestKey{key.algorithm, entry.hex});
    }
  }
  return line;
}

namespace {

// Reads one line (without its newline) into `out`, as an entry or as
// unreadable; `raw` is scratch space. `out.hex` must have room for the
// line's digests in hex: the views of earlier entries point into it.
void
add_journal_line(JournalContents& out, std::string_view line, size_t number, size_t digest_bytes, std::string& raw)
{
  raw.clear();
  bool readable = true;
  for (size_t i = 0; i < line.size() && readable; ++i) {
    char byte = line[i];
    if (byte == '\\') {
      readable = ++i < line.size() && (line[i] == 'n' || line[i] == '\\');
      byte = readable && line[i] == 'n' ? '\n' : '\\';
    }
    raw += byte;
  }
  if (!readable || raw.size() < 2 * digest_bytes || raw.size() % digest_bytes != 0) {
    out.unreadable.push_back(number);
    return;
  }
  JournalEntry entry;
  entry.line = number;
  for (size_t at = 0; at < raw.size(); at += digest_bytes) {
    const size_t start = out.hex.size();
    out.hex += util::to_hex(reinterpret_cast<const unsigned char*>(raw.data() + at), digest_bytes);
    const std::string_view hex = std::string_view(out.hex).substr(start, 2 * digest_bytes);
    (at == 0 ? entry.manifest : entry.inputs.emplace_back()) = hex;
  }
  out.entries.push_back(std::move(entry));
}

} // namespace

JournalContents
parse_journal(std::string_view text, digest::Algorithm algorithm)
{
  JournalContents out;
  const size_t digest_bytes = digest::digest_size(algorithm);
  // The raw bytes are never more than the text: the views below stay valid.
  out.hex.reserve(2 * text.size() + 1);
  std::string raw;
  for (size_t number = 1; !text.empty(); ++number) {
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      out.torn_tail = true;
      break;
    }
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (!line.empty()) {
      add_journal_line(out, line, number, digest_bytes, raw);
    }
  }
  return out;
}

JournalContents
parse_journal_line(std::string_view line, digest::Algorithm algorithm)
{
  JournalContents out;
  out.hex.reserve(2 * line.size() + 1);
  std::string raw;
  if (!line.empty()) {
    add_journal_line(out, line, 1, digest::digest_size(algorithm), raw);
  }
  return out;
}

} // namespace fingerprint::store
