// reference_patterns.h - the bench's inputs and their exact expected results.
//
// Element g of rank r's input at call number `seq` is value(r, (g + phase) mod
// L) with phase = 13 seq mod L, L = 1540 (a multiple of every period used), so
// inputs change with every call yet stay periodic: filling and checking copy
// or compare precomputed tables of L elements. Values keep every result exact
// in every dtype:
//   sum, none: small integers (-2..2; 0..3 unsigned)
//   prod:      1, -1 (signed only) and 2, at most ceil(p/4) twos per element
//   min, max:  -5..5 (0..10 unsigned)
//   avg:       base + r - (p-1)/2, so the ranks' values sum to p*base exactly
// The expected reduction is folded in double over all ranks, independently of
// the library's kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexbench {

class ReferencePatterns {
 public:
  // `reduces` false (broadcast, allgather): `op` is ignored, inputs use the sum pattern.
  ReferencePatterns(matex_dtype_t dtype, matex_op_t op, bool reduces, int world_size);

  // Writes elements [first, first + count) of `rank`'s input for call `seq`.
  void fill_input(int rank, uint64_t seq, size_t first, size_t count, void* dst) const;
  // Wrong elements in `data`, which should hold elements [first, first + count)
  // of the reduction over all ranks (call `seq`).
  uint64_t count_wrong_reduced(uint64_t seq, size_t first, size_t count, const void* data) const;
  // Same, against `rank`'s input.
  uint64_t count_wrong_input(int rank, uint64_t seq, size_t first, size_t count, const void* data) const;

 private:
  void fill_from(const std::vector<unsigned char>& table, uint64_t seq, size_t first, size_t count,
                 void* dst) const;
  uint64_t compare_with(const std::vector<unsigned char>& table, uint64_t seq, size_t first, size_t count,
                        const void* data) const;
  double input_value(int rank, size_t k) const;

  matex_dtype_t dtype_;
  matex_op_t op_;
  int world_size_;
  size_t element_size_;
  // Each table holds 2L elements (the L-periodic sequence twice), so any
  // window of L elements starting at a phase is contiguous.
  std::vector<std::vector<unsigned char>> inputs_;  // per rank
  std::vector<unsigned char> reduced_;
};

}  // namespace matexbench
