#include "hello.hpp"
#include <iostream>

int
main()
{
  std::cout << hello::message() << "\n";
}
