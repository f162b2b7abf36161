#include "core/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define MATEX_HAVE_STREAMING_STORES 1
#endif

namespace matexcomm {

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

}  // namespace matexcomm
