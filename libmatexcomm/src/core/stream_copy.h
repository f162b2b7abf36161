// stream_copy.h - copies whose destination bypasses the caches (non-temporal
// stores), for outputs too large to stay in cache: a normal store first reads
// the destination line (read-for-ownership), a streaming store does not, which
// saves a third of the memory traffic of a large copy or reduction.
#pragma once

#include <cstddef>

#include "matexcomm/matexcomm.h"

namespace matexcomm {

// memcpy(dst, src, bytes) with streaming stores where the CPU has them.
void stream_copy(void* dst, const void* src, size_t bytes);

// reduce_sources (core/reduce_kernels.h) whose output is written with
// streaming stores; the same aliasing rules apply.
void reduce_sources_streaming(matex_dtype_t dtype, matex_op_t op, void* out, const void* const* srcs, int nsrc,
                              size_t count);

}  // namespace matexcomm
