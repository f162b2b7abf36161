// table_text.h - how the selection tables' explanations (matex-bench
// --explain) write sizes and times: a byte count with a binary unit
// ("1 KiB", "1.5 MiB"), seconds as microseconds ("12.5 us", "-" for a
// time not measured), factors ("1.5"), and the sizes a band covers.
#pragma once

#include <cstddef>
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

// The sizes band `index` of `count` covers, for a band that runs from above
// `above_bytes` (the band before's end) up to `up_to_bytes`; the last band
// covers every larger size too.
inline std::string band_range(size_t index, size_t count, double above_bytes, double up_to_bytes) {
  if (count == 1) return "every size";
  const std::string up_to = "up to " + with_unit(up_to_bytes);
  if (index == 0) return up_to;
  const std::string above = "above " + with_unit(above_bytes);
  return index + 1 == count ? above : above + ", " + up_to;
}

// A ratio or factor as the shortest of "%g": 1.5 -> "1.5", 2 -> "2".
inline std::string factor(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

inline std::string microseconds(double seconds) {
  if (seconds < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

}  // namespace matexcomm
