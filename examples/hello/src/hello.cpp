#include "hello.hpp"

#include <greet/greet.hpp>

namespace hello {

std::string
message()
{
  return greet::greeting("world") + "!";
}

} // namespace hello
