#include "word.hpp"
const char*
word()
{
  return "chain";
}
