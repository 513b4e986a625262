#include "phrase.hpp"
#include <cstdio>
int
main()
{
  std::puts(phrase().c_str());
}
