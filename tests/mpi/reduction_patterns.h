// reduction_patterns.h - per-rank inputs of the reduction tests and their
// reference results, computed in the test and independent of the library.
//
// Inputs are small integers chosen so every result is exact in every dtype
// (int8 and bfloat16 included) for up to kMaxRanks ranks:
//   sum:      [-30, 30] (uint8: [0, 60])    -> |sum| <= 120 (uint8 <= 240)
//   prod:     {1, -1, 2} (uint8: {1, 2})    -> |prod| <= 16
//   min/max:  [-100, 100] (uint8: [0, 200])
//   avg:      v(i) + d(r), v in [-20, 20], d(r) = 2r - (p-1), sum_r d(r) = 0,
//             so the sum is p*v(i) and the average is exactly v(i).
// Every input varies with the element index and the rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "matexcomm/matexcomm.h"

namespace matex_test {

constexpr int kMaxRanks = 4;

class ReductionPattern {
 public:
  ReductionPattern(matex_op_t op, bool is_unsigned, int world_size)
      : op_(op), unsigned_(is_unsigned), world_(world_size) {
    if (world_size > kMaxRanks) {
      throw std::invalid_argument("ReductionPattern: exact inputs are designed for <= 4 ranks");
    }
  }

  // Input of element i on rank r.
  int64_t input(size_t i, int r) const {
    const int64_t k = static_cast<int64_t>(i);
    switch (op_) {
      case MATEX_SUM: {
        const int64_t base = (k * 7 + r * 13 + 5) % 61;
        return unsigned_ ? base : base - 30;
      }
      case MATEX_PROD: {
        const int64_t t = (k * 5 + r * 3) % 7;
        if (t < 3) return 1;
        if (t < 5) return unsigned_ ? 1 : -1;
        return 2;
      }
      case MATEX_MIN:
      case MATEX_MAX: {
        const int64_t base = (k * 11 + r * 29 + 3) % 201;
        return unsigned_ ? base : base - 100;
      }
      case MATEX_AVG:
        return (k * 7) % 41 - 20 + (2 * r - (world_ - 1));
      default:
        throw std::invalid_argument("ReductionPattern: unknown op " + std::to_string(int(op_)));
    }
  }

  // The reduction over all ranks of input(i, r).
  int64_t expected(size_t i) const {
    int64_t acc = input(i, 0);
    for (int r = 1; r < world_; ++r) {
      const int64_t x = input(i, r);
      switch (op_) {
        case MATEX_SUM: case MATEX_AVG: acc += x; break;
        case MATEX_PROD: acc *= x; break;
        case MATEX_MIN: acc = x < acc ? x : acc; break;
        case MATEX_MAX: acc = x > acc ? x : acc; break;
        default: break;
      }
    }
    if (op_ == MATEX_AVG) {
      if (acc % world_ != 0) throw std::logic_error("ReductionPattern: avg input sum not divisible");
      acc /= world_;
    }
    return acc;
  }

 private:
  matex_op_t op_;
  bool unsigned_;
  int world_;
};

// Inputs of broadcast and allgather: any small integer, varying with i and `who`.
inline int64_t plain_value(size_t i, int who, bool is_unsigned) {
  const int64_t base = (static_cast<int64_t>(i) * 13 + who * 37 + 1) % 201;
  return is_unsigned ? base : base - 100;
}

constexpr matex_dtype_t kAllDtypes[] = {MATEX_INT8,     MATEX_UINT8,    MATEX_INT32,   MATEX_INT64,
                                        MATEX_FLOAT16,  MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_FLOAT64};
constexpr matex_op_t kAllOps[] = {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX, MATEX_AVG};

}  // namespace matex_test
