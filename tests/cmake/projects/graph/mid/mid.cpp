#include "mid.hpp"

#include "table.hpp"
#include "version.hpp"
#include <base/base.hpp>
#include <hdr/hdr.hpp>
int
mid_value()
{
  return base_value() + hdr_value() + MID_TABLE - 7;
}
const char*
mid_version()
{
  return MID_VERSION;
}
