#include <greet/greet.hpp>

namespace greet {

std::string
greeting(const std::string& who)
{
  return "hello, " + who;
}

} // namespace greet
