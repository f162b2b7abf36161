#include "core/stream_copy.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/reduce_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define MATEX_HAVE_STREAMING_STORES 1
#endif

namespace matexcomm {

namespace {
constexpr size_t kStagingBytes = 16 * 1024;  // L1-resident staging block of reduce_sources_streaming
}  // namespace

void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(MATEX_HAVE_STREAMING_STORES)
  char* out = static_cast<char*>(dst);
  const char* in = static_cast<const char*>(src);
  // Head: plain copy up to the first 16-byte aligned destination address.
  size_t head = (16 - (reinterpret_cast<uintptr_t>(out) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(out, in, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  std::memcpy(out + i, in + i, bytes - i);
  _mm_sfence();  // streaming stores are weakly ordered: publish them before any flag
#else
  std::memcpy(dst, src, bytes);
#endif
}

void reduce_sources_streaming(matex_dtype_t dtype, matex_op_t op, void* out, const void* const* srcs, int nsrc,
                              size_t count) {
  const size_t element = dtype_size(dtype);
  const size_t block = kStagingBytes / element;
  alignas(64) static thread_local char staging[kStagingBytes];
  std::vector<const void*> shifted(srcs, srcs + nsrc);
  for (size_t first = 0; first < count; first += block) {
    const size_t n = count - first < block ? count - first : block;
    for (int s = 0; s < nsrc; ++s) shifted[s] = static_cast<const char*>(srcs[s]) + first * element;
    reduce_sources(dtype, op, staging, shifted.data(), nsrc, n);
    stream_copy(static_cast<char*>(out) + first * element, staging, n * element);
  }
}

}  // namespace matexcomm
