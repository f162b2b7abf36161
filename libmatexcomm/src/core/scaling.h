// scaling.h - multiply a buffer by a factor in place, for the floating dtypes
// (the engine's pre- and post-scale, the communicator's premultiplied sums);
// float16 and bfloat16 widen to float, multiply, and round once.
// Cost: one read and one write per element; nothing at all for factor 1.
// Preconditions: dtype is floating unless factor is 1.
#pragma once

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

void scale_elements(matex_dtype_t dtype, void* data, size_t count, double factor);

}  // namespace matexcomm
