#include "mid.hpp"

#include "version.hpp"
#include <base/base.hpp>
#include <hdr/hdr.hpp>
int
mid_value()
{
  return base_value() + hdr_value();
}
const char*
mid_version()
{
  return MID_VERSION;
}
