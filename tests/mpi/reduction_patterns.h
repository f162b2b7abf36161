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
//   band/bor/bxor: [-16, 15] (unsigned: [0, 31]) -> results stay in that range.
//   bool:     0 or 1, mostly 1 for the ops that are an and (prod, min, band),
//             mostly 0 for those that are an or (sum, max, bor), so that the
//             results mix both; the reference uses logical and/or/xor.
// Every input varies with the element index and the rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matex_test {

constexpr int kMaxRanks = 4;

class ReductionPattern {
 public:
  ReductionPattern(matex_op_t op, bool is_unsigned, int world_size, bool is_bool = false)
      : op_(op), unsigned_(is_unsigned), bool_(is_bool), world_(world_size) {
    if (world_size > kMaxRanks) {
      throw std::invalid_argument("ReductionPattern: exact inputs are designed for <= 4 ranks");
    }
    if (is_bool && op == MATEX_AVG) throw std::invalid_argument("ReductionPattern: bool has no avg");
  }

  // Input of element i on rank r.
  int64_t input(size_t i, int r) const {
    const int64_t k = static_cast<int64_t>(i);
    if (bool_) return bool_input(k, r);
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
      case MATEX_BAND:
      case MATEX_BOR:
      case MATEX_BXOR: {
        const int64_t base = (k * 5 + r * 11 + 2 + k / 32) % 32;
        return unsigned_ ? base : base - 16;
      }
      default:
        throw std::invalid_argument("ReductionPattern: unknown op " + std::to_string(int(op_)));
    }
  }

  // The reduction over all ranks of input(i, r).
  int64_t expected(size_t i) const {
    int64_t acc = input(i, 0);
    for (int r = 1; r < world_; ++r) {
      const int64_t x = input(i, r);
      if (bool_) {
        acc = bool_combine(acc, x);
        continue;
      }
      switch (op_) {
        case MATEX_SUM: case MATEX_AVG: acc += x; break;
        case MATEX_PROD: acc *= x; break;
        case MATEX_MIN: acc = x < acc ? x : acc; break;
        case MATEX_MAX: acc = x > acc ? x : acc; break;
        case MATEX_BAND: acc &= x; break;
        case MATEX_BOR: acc |= x; break;
        case MATEX_BXOR: acc ^= x; break;
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
  bool is_and() const { return op_ == MATEX_PROD || op_ == MATEX_MIN || op_ == MATEX_BAND; }
  bool is_or() const { return op_ == MATEX_SUM || op_ == MATEX_MAX || op_ == MATEX_BOR; }

  int64_t bool_input(int64_t k, int r) const {
    const int64_t t = (k * 7 + r * 3 + k / 5) % 5;
    if (is_and()) return t != 0;
    if (is_or()) return t == 0;
    return t % 2;  // bxor
  }

  int64_t bool_combine(int64_t a, int64_t b) const {
    if (is_and()) return (a != 0 && b != 0) ? 1 : 0;
    if (is_or()) return (a != 0 || b != 0) ? 1 : 0;
    return (a != 0) != (b != 0) ? 1 : 0;  // bxor
  }

  matex_op_t op_;
  bool unsigned_;
  bool bool_;
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

// The dtypes and ops added after the matrices above were sized: the tests run
// them in a sweep of their own, with fewer counts.
constexpr matex_dtype_t kNewDtypes[] = {MATEX_BOOL, MATEX_INT16, MATEX_UINT16, MATEX_UINT32, MATEX_UINT64};
constexpr matex_op_t kBitwiseOps[] = {MATEX_BAND, MATEX_BOR, MATEX_BXOR};
constexpr matex_op_t kEveryOp[] = {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX,
                                   MATEX_AVG, MATEX_BAND, MATEX_BOR,  MATEX_BXOR};

inline bool is_bitwise(matex_op_t op) { return op == MATEX_BAND || op == MATEX_BOR || op == MATEX_BXOR; }

// Pairs the library must refuse with MATEX_ERR_INVALID_ARG: avg on integers
// and bool, the bitwise ops on floating dtypes.
inline bool refused_pair(matex_dtype_t dtype, matex_op_t op) {
  const bool floating =
      dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 || dtype == MATEX_FLOAT32 || dtype == MATEX_FLOAT64;
  return op == MATEX_AVG ? !floating : is_bitwise(op) && floating;
}

// The (dtype, op) pairs of the new sweep: every op of the new dtypes, the
// bitwise ops of the older integer dtypes, and (for the rejection checks) the
// bitwise ops of the floating dtypes.
struct DtypeOp {
  matex_dtype_t dtype;
  matex_op_t op;
};
inline std::vector<DtypeOp> new_reduction_pairs() {
  std::vector<DtypeOp> pairs;
  for (matex_dtype_t d : kNewDtypes) {
    for (matex_op_t op : kEveryOp) pairs.push_back({d, op});
  }
  for (matex_dtype_t d : kAllDtypes) {
    for (matex_op_t op : kBitwiseOps) pairs.push_back({d, op});
  }
  return pairs;
}

}  // namespace matex_test
