#include <greet/greet.hpp>
#include <iostream>

int
main()
{
  std::cout << greet::greeting("plain") << "\n";
}
