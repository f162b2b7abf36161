// case_spec.h - one case matex-bench times: collective, dtype, op, root,
// count and placement.
#pragma once

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexbench {

struct CaseSpec {
  matex_collective_t coll = MATEX_COLL_ALLREDUCE;
  matex_dtype_t dtype = MATEX_FLOAT32;
  matex_op_t op = MATEX_SUM;
  int root = 0;
  size_t count = 0;  // the count argument of the call (per rank for allgather, reduce_scatter)
  bool in_place = false;
};

}  // namespace matexbench
