#pragma once

#include <string>

namespace greet {

std::string greeting(const std::string& who);

} // namespace greet
