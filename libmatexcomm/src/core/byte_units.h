// byte_units.h - a byte count as text with a binary unit ("1 KiB", "1.5 MiB"),
// for the selection tables' explanations.
#pragma once

#include <cstdio>
#include <string>

namespace matexcomm {

inline std::string with_unit(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g %s", bytes, units[unit]);
  return text;
}

}  // namespace matexcomm
