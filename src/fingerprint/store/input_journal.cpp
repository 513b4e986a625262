#include <fingerprint/store/input_journal.hpp>
#include <fingerprint/util/text.hpp>

#include <unordered_set>

namespace fingerprint::store {

std::string
journal_line(const DigestKey& key, const Manifest& manifest)
{
  std::string line;
  line.reserve((manifest.entries.size() + 1) * (key.hex.size() + 1));
  line += key.hex;
  // An input read at two paths, or in two roles, is indexed once.
  std::unordered_set<std::string_view> seen;
  seen.reserve(manifest.entries.size());
  for (const ManifestEntry& entry : manifest.entries) {
    if (seen.insert(entry.hex).second) {
      line += ' ';
      line += entry.hex;
    }
  }
  return line;
}

JournalContents
parse_journal(std::string_view text, digest::Algorithm algorithm)
{
  JournalContents out;
  const size_t width = 2 * digest::digest_size(algorithm);
  for (size_t number = 1; !text.empty(); ++number) {
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      out.torn_tail = true;
      break;
    }
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (line.empty()) {
      continue;
    }
    JournalEntry entry;
    entry.line = number;
    bool readable = true;
    for (bool first = true; !line.empty(); first = false) {
      const std::string_view hex = line.substr(0, width);
      if (!util::is_lower_hex(hex, width) || (line.size() > width && line[width] != ' ')) {
        readable = false;
        break;
      }
      (first ? entry.manifest : entry.inputs.emplace_back()) = hex;
      line.remove_prefix(std::min(line.size(), width + 1));
    }
    if (readable && !entry.inputs.empty()) {
      out.entries.push_back(std::move(entry));
    } else {
      out.unreadable.push_back(number);
    }
  }
  return out;
}

} // namespace fingerprint::store
