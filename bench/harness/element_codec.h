// element_codec.h - one element of any matex dtype read as / written from a
// double, plus two dtype facts the bench needs (floating, signed). Reference values are small integers or halves, exact in every
// dtype, so a double carries them without loss.
#pragma once

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexbench {

// Sizes and names come from the library's C API (matex_dtype_size,
// matex_dtype_name, matex_op_name).
bool dtype_is_float(matex_dtype_t dtype);
bool dtype_is_signed(matex_dtype_t dtype);

// Writes `value` (rounded to nearest even for the float types) at element `index` of `data`.
void store_element(matex_dtype_t dtype, void* data, size_t index, double value);
double load_element(matex_dtype_t dtype, const void* data, size_t index);

}  // namespace matexbench
