// table_text.h - how the selection tables' explanations (matex-bench
// --explain) write sizes and times: a byte count with a binary unit
// ("1 KiB", "1.5 MiB"), and seconds as microseconds ("12.5 us", "-" for a
// time not measured).
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

inline std::string microseconds(double seconds) {
  if (seconds < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

}  // namespace matexcomm
