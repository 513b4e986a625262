#include "base_answer.hpp"
#include <base/base.hpp>
int
base_value()
{
  return BASE_ANSWER;
}
