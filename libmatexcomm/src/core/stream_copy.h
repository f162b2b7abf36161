// stream_copy.h - a copy whose destination bypasses the caches (non-temporal
// stores), for outputs too large to stay in cache: a normal store first reads
// the destination line (read-for-ownership), a streaming store does not, which
// saves a third of the memory traffic of a large copy.
#pragma once

#include <cstddef>

namespace matexcomm {

// memcpy(dst, src, bytes) with streaming stores where the CPU has them.
void stream_copy(void* dst, const void* src, size_t bytes);

}  // namespace matexcomm
