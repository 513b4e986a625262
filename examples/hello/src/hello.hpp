#pragma once

#include <string>

namespace hello {

std::string message();

} // namespace hello
