// index_list.h - compact text form of a set of indices, as taskset and
// numactl print it: {0,1,2,3,8} <-> "0-3,8". Internal to matex_topology.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace matexcomm::topo {

// Sorts and de-duplicates `indices`, then joins runs of consecutive values
// as "first-last". Negative values are kept as they are. Empty -> "".
inline std::string format_index_list(std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::string text;
  for (size_t i = 0; i < indices.size();) {
    size_t run_end = i;
    while (run_end + 1 < indices.size() && indices[run_end + 1] == indices[run_end] + 1) ++run_end;
    if (!text.empty()) text += ',';
    text += std::to_string(indices[i]);
    if (run_end > i) text += '-' + std::to_string(indices[run_end]);
    i = run_end + 1;
  }
  return text;
}

// The reverse, as the kernel writes CPU lists in /sys and /proc: "0-3,8" ->
// {0,1,2,3,8}, sorted and de-duplicated. Parsing stops at the first item that
// is not a number or a range; "" -> {}.
inline std::vector<int> parse_index_list(const std::string& text) {
  std::vector<int> indices;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    char* stop = nullptr;
    long first = std::strtol(item.c_str(), &stop, 10);
    if (stop == item.c_str() || first < 0) break;
    long last = first;
    if (*stop == '-') {
      const char* second = stop + 1;
      last = std::strtol(second, &stop, 10);
      if (stop == second) break;
    }
    for (long i = first; i <= last && i - first < (1 << 20); ++i) indices.push_back(static_cast<int>(i));
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

}  // namespace matexcomm::topo
