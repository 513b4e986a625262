#include <greet/greet.hpp>
#include <hello.hpp>
#include <iostream>
#include <lyrics.hpp>

int
main()
{
  std::cout << hello::message() << " " << greet::greeting("everyone") << " (" << k_lyrics << ")\n";
}
