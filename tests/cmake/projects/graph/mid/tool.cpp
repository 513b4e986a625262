#include <nlohmann/json.hpp>

#include "mid.hpp"
#include <iostream>
int
main()
{
  std::cout << nlohmann::json{{"value", mid_value()}, {"version", mid_version()}}.dump() << "\n";
}
