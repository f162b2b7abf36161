// result_row.h - one row of matex-bench's results: a size, dtype and op,
// with the out-of-place and in-place measurements, and the bandwidths
// derived from them (nccl-tests definitions).
#pragma once

#include <cstddef>
#include <string>

#include "collective_runner.h"

namespace matexbench {

struct ResultRow {
  size_t bytes = 0;          // the size column: per-rank buffer as in nccl-tests
  size_t count = 0;          // elements that `bytes` holds
  matex_dtype_t dtype = MATEX_FLOAT32;
  std::string redop;         // "sum"..., or "none" for broadcast and allgather
  int root = -1;             // broadcast only
  bool has[2] = {false, false};  // [0] out-of-place, [1] in-place
  Measurement result[2];
};

// GB/s (1e9 bytes/s); 0 for a zero time.
inline double algbw_gbps(size_t bytes, double time_us) { return time_us > 0 ? bytes / time_us / 1e3 : 0.0; }

}  // namespace matexbench
