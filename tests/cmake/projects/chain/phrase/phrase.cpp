#include "phrase.hpp"

#include "word.hpp"
std::string
phrase()
{
  return std::string("a ") + word();
}
