// index_list.h - compact text form of a set of indices, as taskset and
// numactl print it: {0,1,2,3,8} -> "0-3,8". Internal to matex_topology.
#pragma once

#include <algorithm>
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

}  // namespace matexcomm::topo
