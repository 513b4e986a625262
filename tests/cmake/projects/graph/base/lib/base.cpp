#include <base/base.hpp>
int
base_value()
{
  return 40;
}
