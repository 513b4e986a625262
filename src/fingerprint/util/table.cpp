#include <fingerprint/util/table.hpp>

#include <algorithm>

namespace fingerprint::util {

std::string
format_table(const std::vector<std::vector<std::string>>& rows, size_t indent)
{
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line(indent, ' ');
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line.append(widths[i] - row[i].size() + 2, ' ');
      }
    }
    text += line;
    text += '\n';
  }
  return text;
}

} // namespace fingerprint::util
