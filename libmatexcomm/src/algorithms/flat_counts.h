// flat_counts.h - element counts and displacements as the int arrays MPI's
// v-collectives take (the caller has checked that each fits an int).
#pragma once

#include <cstddef>
#include <vector>

namespace matexcomm {

inline std::vector<int> to_int_array(const std::vector<size_t>& values) {
  return std::vector<int>(values.begin(), values.end());
}

}  // namespace matexcomm
