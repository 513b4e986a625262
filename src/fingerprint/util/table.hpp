#pragma once

#include <string>
#include <vector>

namespace fingerprint::util {

// Rows as aligned columns, two spaces apart, each line indented by `indent`;
// the last column is not padded. The first row is usually a header.
std::string format_table(const std::vector<std::vector<std::string>>& rows, size_t indent = 0);

} // namespace fingerprint::util
