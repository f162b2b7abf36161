// rooted_patterns.h - the inputs of the rooted, all-to-all, point-to-point and
// sub-communicator tests: small exact integers that depend on the element and
// the rank, so every rank can compute every other rank's input (and so an
// independent reference) without communicating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "matexcomm/matexcomm.h"

namespace matex_test {

// -11..11 (0..22 for unsigned dtypes): sums over 4 ranks stay exact in bfloat16.
inline int64_t rooted_value(size_t i, int rank, bool is_unsigned) {
  const int64_t base = static_cast<int64_t>((i * 7 + static_cast<size_t>(rank) * 11 + 3) % 23);
  return is_unsigned ? base : base - 11;
}

// Factors for products: 1, -1, 2, -2 (1, 2 for unsigned), so that products over 4 ranks stay exact.
inline int64_t product_value(size_t i, int rank, bool is_unsigned) {
  static const int64_t kSigned[4] = {1, -1, 2, -2};
  const size_t k = (i + static_cast<size_t>(rank)) % 4;
  return is_unsigned ? static_cast<int64_t>(k % 2 + 1) : kSigned[k];
}

inline std::string describe_call(const char* call, matex_dtype_t dtype, size_t count, int root) {
  return std::string(call) + " dtype=" + matex_dtype_name(dtype) + " count=" + std::to_string(count) +
         (root >= 0 ? " root=" + std::to_string(root) : std::string());
}

}  // namespace matex_test
