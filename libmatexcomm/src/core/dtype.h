// dtype.h - facts about matex_dtype_t and matex_op_t: sizes, names, validity,
// and which (dtype, op) pairs are reductions the library performs.
#pragma once

#include <cstddef>
#include <string>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

bool dtype_valid(matex_dtype_t dtype);
bool op_valid(matex_op_t op);
bool dtype_is_floating(matex_dtype_t dtype);
bool op_is_bitwise(matex_op_t op);  // band, bor, bxor
size_t dtype_size(matex_dtype_t dtype);  // 0 when invalid
const char* dtype_name(matex_dtype_t dtype);  // "unknown" when invalid
const char* op_name(matex_op_t op);

// Why a valid (dtype, op) pair is not a reduction the library performs (avg on
// a non-floating dtype, a bitwise op on a floating one), or "" when it is.
std::string reduction_problem(matex_dtype_t dtype, matex_op_t op);

// Throws MATEX_ERR_INVALID_ARG naming the argument when dtype/op is unknown or
// the pair is not allowed (see reduction_problem).
void require_dtype(matex_dtype_t dtype, const char* argument);
void require_reduction(matex_dtype_t dtype, matex_op_t op);

}  // namespace matexcomm
