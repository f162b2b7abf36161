// tensor_types.h - how torch's dtypes and ReduceOps map onto libmatexcomm's.
//
// Reductions need a dtype libmatexcomm can add up; collectives that only move
// data (broadcast, gathers, scatters, all-to-all, send/recv) take any dtype,
// sent as bytes when libmatexcomm has no such type (complex, float8).
#pragma once

#include <ATen/ATen.h>
#include <matexcomm/matexcomm.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace matex_torch {

// The matex dtype a tensor of `type` is reduced as. Throws an error naming
// the collective and the dtype when libmatexcomm cannot reduce it.
matex_dtype_t reduction_dtype(at::ScalarType type, const char* collective);

// How a tensor of `type` travels in a collective that only moves data: as
// `dtype`, `per_element` of them per tensor element.
struct Movement {
  matex_dtype_t dtype;
  size_t per_element;
};
Movement movement_of(at::ScalarType type);

// A torch ReduceOp on a tensor of `type` as libmatexcomm spells it: an op,
// or a sum of inputs pre-multiplied by `factor` (PREMUL_SUM). Throws for an
// op the dtype does not allow (AVG on integers, bitwise ops on floats).
struct Reduction {
  matex_op_t op = MATEX_SUM;
  bool premultiplied = false;
  double factor = 1.0;
};
Reduction reduction_of(const c10d::ReduceOp& op, at::ScalarType type, const char* collective);

}  // namespace matex_torch
