// reduce_kernels_impl.h - the typed reduction loops behind reduce_kernels.h,
// compiled once per instruction set (reduce_kernels_{generic,avx2,avx512}.cc
// define MATEX_KERNEL_ISA and the compiler flags); reduce_kernels.cc picks the
// best one the CPU supports at run time.
//
// Cost: one read of every source and one write of the output per element, in
// L1-sized blocks; float16/bfloat16 add a widen and a narrow per element.
// Integers wrap around (two's complement, like MPI); bool runs on its bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "core/half_float.h"
#include "core/reduce_kernels.h"

#ifndef MATEX_KERNEL_ISA
#error "define MATEX_KERNEL_ISA before including reduce_kernels_impl.h"
#endif

namespace matexcomm {
namespace MATEX_KERNEL_ISA {

namespace {

constexpr size_t kBlock = 1024;  // elements per L1-resident block

struct Sum { template <class T> static T apply(T a, T b) { return static_cast<T>(a + b); } };
struct Prod { template <class T> static T apply(T a, T b) { return static_cast<T>(a * b); } };
struct Min { template <class T> static T apply(T a, T b) { return b < a ? b : a; } };
struct Max { template <class T> static T apply(T a, T b) { return a < b ? b : a; } };
struct BitAnd { template <class T> static T apply(T a, T b) { return static_cast<T>(a & b); } };
struct BitOr { template <class T> static T apply(T a, T b) { return static_cast<T>(a | b); } };
struct BitXor { template <class T> static T apply(T a, T b) { return static_cast<T>(a ^ b); } };

template <class Op>
constexpr bool kBitwise = std::is_same_v<Op, BitAnd> || std::is_same_v<Op, BitOr> || std::is_same_v<Op, BitXor>;

// Wrap-around arithmetic for integers (as MPI does) without signed-overflow UB:
// the 8- and 16-bit types compute in 32 bits (uint16 in uint32, where a product
// cannot overflow), the wider signed ones sum and multiply as unsigned.
template <class T> struct Wide { using type = T; };
template <> struct Wide<int8_t> { using type = int32_t; };
template <> struct Wide<uint8_t> { using type = uint32_t; };
template <> struct Wide<int16_t> { using type = int32_t; };
template <> struct Wide<uint16_t> { using type = uint32_t; };

template <class T>
constexpr bool kWrapsAsUnsigned = std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) >= 4;

template <class Op, class T>
void pair_native(T* __restrict inout, const T* __restrict in, size_t count) {
  using W = typename Wide<T>::type;
  if constexpr (kWrapsAsUnsigned<T>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>) {
      for (size_t i = 0; i < count; ++i) {
        inout[i] = static_cast<T>(Op::apply(static_cast<U>(inout[i]), static_cast<U>(in[i])));
      }
      return;
    }
  }
  for (size_t i = 0; i < count; ++i) inout[i] = static_cast<T>(Op::apply(static_cast<W>(inout[i]), static_cast<W>(in[i])));
}

// out[i] = op(a[i], b[i]); out may alias a.
template <class Op, class T>
void pair_to(T* out, const T* a, const T* __restrict b, size_t count) {
  using W = typename Wide<T>::type;
  if constexpr (kWrapsAsUnsigned<T>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>) {
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Op::apply(static_cast<U>(a[i]), static_cast<U>(b[i])));
      return;
    }
  }
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<T>(Op::apply(static_cast<W>(a[i]), static_cast<W>(b[i])));
}

template <class Op, class T>
void sources_native(T* out, const void* const* srcs, int nsrc, size_t count) {
  if (nsrc == 1) {
    const T* only = static_cast<const T*>(srcs[0]);
    if (out != only) std::copy(only, only + count, out);
    return;
  }
  for (size_t begin = 0; begin < count; begin += kBlock) {
    size_t n = std::min(kBlock, count - begin);
    pair_to<Op, T>(out + begin, static_cast<const T*>(srcs[0]) + begin, static_cast<const T*>(srcs[1]) + begin, n);
    for (int s = 2; s < nsrc; ++s) pair_native<Op, T>(out + begin, static_cast<const T*>(srcs[s]) + begin, n);
  }
}

// The 16-bit formats, converted a block at a time; with F16C (the AVX2 and
// AVX-512 builds) binary16 converts eight values per instruction.
struct Binary16 {
  static void widen(const uint16_t* in, float* out, size_t n) {
    size_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    }
#endif
    for (; i < n; ++i) out[i] = half_to_float(in[i]);
  }
  static void narrow(const float* in, uint16_t* out, size_t n) {
    size_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8) {
      __m128i packed = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
    }
#endif
    for (; i < n; ++i) out[i] = float_to_half(in[i]);
  }
};

struct BFloat16 {
  static void widen(const uint16_t* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
  }
  static void narrow(const float* in, uint16_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
  }
};

template <class Format, class Op>
void sources_half(uint16_t* out, const void* const* srcs, int nsrc, size_t count) {
  float acc[kBlock];
  float next[kBlock];
  for (size_t begin = 0; begin < count; begin += kBlock) {
    size_t n = std::min(kBlock, count - begin);
    Format::widen(static_cast<const uint16_t*>(srcs[0]) + begin, acc, n);
    for (int s = 1; s < nsrc; ++s) {
      Format::widen(static_cast<const uint16_t*>(srcs[s]) + begin, next, n);
      for (size_t i = 0; i < n; ++i) acc[i] = Op::apply(acc[i], next[i]);
    }
    Format::narrow(acc, out + begin, n);
  }
}

// Floating dtypes have no bitwise ops (require_reduction rejects them first).
template <class Op>
void dispatch_floating(matex_dtype_t dtype, void* out, const void* const* srcs, int nsrc, size_t count) {
  if constexpr (kBitwise<Op>) {
    MATEX_RAISE(MATEX_ERR_INTERNAL, "bitwise reduction kernel called with a floating dtype");
  } else {
    switch (dtype) {
      case MATEX_FLOAT32: return sources_native<Op>(static_cast<float*>(out), srcs, nsrc, count);
      case MATEX_FLOAT64: return sources_native<Op>(static_cast<double*>(out), srcs, nsrc, count);
      case MATEX_FLOAT16:
        return sources_half<Binary16, Op>(static_cast<uint16_t*>(out), srcs, nsrc, count);
      case MATEX_BFLOAT16:
        return sources_half<BFloat16, Op>(static_cast<uint16_t*>(out), srcs, nsrc, count);
      default:
        MATEX_RAISE(MATEX_ERR_INTERNAL, "reduction kernel called with an unknown dtype");
    }
  }
}

template <class Op>
void dispatch_sources(matex_dtype_t dtype, void* out, const void* const* srcs, int nsrc, size_t count) {
  switch (dtype) {
    case MATEX_INT8: return sources_native<Op>(static_cast<int8_t*>(out), srcs, nsrc, count);
    case MATEX_UINT8: return sources_native<Op>(static_cast<uint8_t*>(out), srcs, nsrc, count);
    case MATEX_INT16: return sources_native<Op>(static_cast<int16_t*>(out), srcs, nsrc, count);
    case MATEX_UINT16: return sources_native<Op>(static_cast<uint16_t*>(out), srcs, nsrc, count);
    case MATEX_INT32: return sources_native<Op>(static_cast<int32_t*>(out), srcs, nsrc, count);
    case MATEX_UINT32: return sources_native<Op>(static_cast<uint32_t*>(out), srcs, nsrc, count);
    case MATEX_INT64: return sources_native<Op>(static_cast<int64_t*>(out), srcs, nsrc, count);
    case MATEX_UINT64: return sources_native<Op>(static_cast<uint64_t*>(out), srcs, nsrc, count);
    default: return dispatch_floating<Op>(dtype, out, srcs, nsrc, count);
  }
}

// bool is a byte holding 0 or 1: sum and max are a logical or, prod and min a
// logical and. They run as max and min on the bytes, which is exactly what the
// MPI path (MPI_UINT8_T with MPI_MAX / MPI_MIN) computes, for any byte.
void reduce_bools(matex_op_t op, void* out, const void* const* srcs, int nsrc, size_t count) {
  uint8_t* bytes = static_cast<uint8_t*>(out);
  switch (op) {
    case MATEX_SUM: case MATEX_MAX: case MATEX_AVG: return sources_native<Max>(bytes, srcs, nsrc, count);
    case MATEX_PROD: case MATEX_MIN: return sources_native<Min>(bytes, srcs, nsrc, count);
    case MATEX_BAND: return sources_native<BitAnd>(bytes, srcs, nsrc, count);
    case MATEX_BOR: return sources_native<BitOr>(bytes, srcs, nsrc, count);
    case MATEX_BXOR: return sources_native<BitXor>(bytes, srcs, nsrc, count);
    default: MATEX_RAISE(MATEX_ERR_INTERNAL, "reduction kernel called with an unknown op");
  }
}

template <class T>
void divide_native(T* data, size_t count, int divisor) {
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < count; ++i) data[i] = data[i] / d;
}

template <class Format>
void divide_half(uint16_t* data, size_t count, int divisor) {
  const float d = static_cast<float>(divisor);
  float values[kBlock];
  for (size_t begin = 0; begin < count; begin += kBlock) {
    size_t n = std::min(kBlock, count - begin);
    Format::widen(data + begin, values, n);
    for (size_t i = 0; i < n; ++i) values[i] = values[i] / d;
    Format::narrow(values, data + begin, n);
  }
}

}  // namespace

void reduce_sources(matex_dtype_t dtype, matex_op_t op, void* out, const void* const* srcs, int nsrc,
                    size_t count) {
  if (count == 0) return;
  if (dtype == MATEX_BOOL) return reduce_bools(op, out, srcs, nsrc, count);
  switch (op) {
    case MATEX_SUM: case MATEX_AVG: return dispatch_sources<Sum>(dtype, out, srcs, nsrc, count);
    case MATEX_PROD: return dispatch_sources<Prod>(dtype, out, srcs, nsrc, count);
    case MATEX_MIN: return dispatch_sources<Min>(dtype, out, srcs, nsrc, count);
    case MATEX_MAX: return dispatch_sources<Max>(dtype, out, srcs, nsrc, count);
    case MATEX_BAND: return dispatch_sources<BitAnd>(dtype, out, srcs, nsrc, count);
    case MATEX_BOR: return dispatch_sources<BitOr>(dtype, out, srcs, nsrc, count);
    case MATEX_BXOR: return dispatch_sources<BitXor>(dtype, out, srcs, nsrc, count);
    default: MATEX_RAISE(MATEX_ERR_INTERNAL, "reduction kernel called with an unknown op");
  }
}

void divide_elements(matex_dtype_t dtype, void* data, size_t count, int divisor) {
  switch (dtype) {
    case MATEX_FLOAT32: return divide_native(static_cast<float*>(data), count, divisor);
    case MATEX_FLOAT64: return divide_native(static_cast<double*>(data), count, divisor);
    case MATEX_FLOAT16: return divide_half<Binary16>(static_cast<uint16_t*>(data), count, divisor);
    case MATEX_BFLOAT16: return divide_half<BFloat16>(static_cast<uint16_t*>(data), count, divisor);
    default: MATEX_RAISE(MATEX_ERR_INTERNAL, "divide_elements needs a floating dtype");
  }
}

}  // namespace MATEX_KERNEL_ISA
}  // namespace matexcomm
