// reduce_kernels.h - element-wise reductions used by every transport.
//
// All kernels treat MATEX_AVG as MATEX_SUM (the average's division happens once,
// at the end, in divide_elements). float16 and bfloat16 are widened to float32
// for the arithmetic. Integers wrap around on overflow; bool (a byte 0/1)
// reduces sum/max as a logical or and prod/min as a logical and; band, bor and
// bxor work on every integer dtype and bool. Loops are written for the
// auto-vectoriser (-O3): plain restrict-qualified arrays, blocks that stay in L1.
#pragma once

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

// inout[i] = op(inout[i], in[i]). The buffers must not overlap.
void reduce_into(matex_dtype_t dtype, matex_op_t op, void* inout, const void* in, size_t count);

// out[i] = op(srcs[0][i], ..., srcs[nsrc-1][i]) with nsrc >= 1. float16 and
// bfloat16 accumulate all sources in float32 and round once. `out` may alias
// one of the sources only if it is srcs[0].
void reduce_sources(matex_dtype_t dtype, matex_op_t op, void* out, const void* const* srcs, int nsrc,
                    size_t count);

// The instruction set the kernels run with: "avx512", "avx2" or "generic".
const char* reduce_kernel_isa();

// data[i] /= divisor, computed in float32 for the 16-bit types (floating dtypes only).
void divide_elements(matex_dtype_t dtype, void* data, size_t count, int divisor);

}  // namespace matexcomm
