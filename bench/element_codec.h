// element_codec.h - one element of any matex dtype read as / written from a
// double, plus the dtype facts the bench needs (size, name, floating,
// signed). Reference values are small integers or halves, exact in every
// dtype, so a double carries them without loss.
#pragma once

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexbench {

size_t element_size(matex_dtype_t dtype);
const char* dtype_label(matex_dtype_t dtype);  // "float32"
const char* op_label(matex_op_t op);           // "sum"
bool dtype_is_float(matex_dtype_t dtype);
bool dtype_is_signed(matex_dtype_t dtype);

// Writes `value` (rounded to nearest even for the float types) at element `index` of `data`.
void store_element(matex_dtype_t dtype, void* data, size_t index, double value);
double load_element(matex_dtype_t dtype, const void* data, size_t index);

}  // namespace matexbench
