#pragma once
inline int
hdr_value()
{
  return 2;
}
