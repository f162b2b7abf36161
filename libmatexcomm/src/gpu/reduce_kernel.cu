// reduce_kernel.cu - launch_reduce: dst[i] = dst[i] op src[i] on the GPU, for
// every dtype and op, with the same results as the CPU kernels
// (core/reduce_kernels_impl.h): integer sums and products wrap, 8- and 16-bit
// integers compute in 32 bits, bool reduces its bytes with max (sum, max) and
// min (prod, min), band/bor/bxor are bitwise (integers and bool only),
// MIN/MAX keep dst when the comparison with a NaN fails (a NaN in dst stays, a
// NaN in src is ignored), float16/bfloat16 compute in float32 and round once
// to nearest even (NaN as core/half_float.h writes it).
//
// Cost: one read of both inputs and one write of dst per element, in a single
// grid-stride launch. When dst and src sit at the same offset modulo 16 bytes,
// a few head elements are done one by one and the rest moves in 16-byte
// vectors, several in flight per thread; otherwise every element is a plain
// coalesced scalar access.
//
// Preconditions: dst and src are device (or managed) pointers aligned to
// their element size; the two ranges do not overlap (or are identical).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/device_kernels.h"
#include "gpu/half_float_device.cuh"

namespace matexcomm::gpu {

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 2048;  // about two waves of an H100/H200; the loops stride

// 16-byte vectors in flight per thread: fewer for the narrow types, whose
// vectors unpack into many registers (kept so that no kernel spills).
template <class T>
constexpr int kUnrollFor = sizeof(T) >= 4 ? 4 : static_cast<int>(sizeof(T));

struct Sum { template <class T> __device__ static T apply(T a, T b) { return static_cast<T>(a + b); } };
struct Prod { template <class T> __device__ static T apply(T a, T b) { return static_cast<T>(a * b); } };
struct Min { template <class T> __device__ static T apply(T a, T b) { return b < a ? b : a; } };
struct Max { template <class T> __device__ static T apply(T a, T b) { return a < b ? b : a; } };
struct BitAnd { template <class T> __device__ static T apply(T a, T b) { return static_cast<T>(a & b); } };
struct BitOr { template <class T> __device__ static T apply(T a, T b) { return static_cast<T>(a | b); } };
struct BitXor { template <class T> __device__ static T apply(T a, T b) { return static_cast<T>(a ^ b); } };

template <class Op>
constexpr bool kBitwise = std::is_same_v<Op, BitAnd> || std::is_same_v<Op, BitOr> || std::is_same_v<Op, BitXor>;

// The type the arithmetic runs in, as on the CPU: 8- and 16-bit types widen to
// 32 bits (uint16 to uint32, where a product cannot overflow), signed sums and
// products wrap through the unsigned type (no UB).
template <class Op, class T> struct Arith { using type = T; };
template <class Op> struct Arith<Op, int8_t> { using type = int32_t; };
template <class Op> struct Arith<Op, uint8_t> { using type = uint32_t; };
template <class Op> struct Arith<Op, int16_t> { using type = int32_t; };
template <class Op> struct Arith<Op, uint16_t> { using type = uint32_t; };
template <> struct Arith<Sum, int32_t> { using type = uint32_t; };
template <> struct Arith<Prod, int32_t> { using type = uint32_t; };
template <> struct Arith<Sum, int64_t> { using type = uint64_t; };
template <> struct Arith<Prod, int64_t> { using type = uint64_t; };

template <class Op, class T>
struct NativeCombine {
  using Storage = T;
  __device__ static T apply(T a, T b) {
    using W = typename Arith<Op, T>::type;
    return static_cast<T>(Op::apply(static_cast<W>(a), static_cast<W>(b)));
  }
};


template <class Op, class Format>
struct HalfCombine {
  using Storage = uint16_t;
  __device__ static uint16_t apply(uint16_t a, uint16_t b) {
    return Format::narrow(Op::apply(Format::widen(a), Format::widen(b)));
  }
};

// One 16-byte vector of elements.
template <class T>
struct alignas(16) Lanes {
  static constexpr int kCount = 16 / sizeof(T);
  T value[kCount];
};

// Elements [head, head + vectors * lanes) move as vectors; the `head` elements
// before and the rest after them one by one.
template <class Combine>
__global__ void __launch_bounds__(kThreads) reduce_kernel(typename Combine::Storage* dst,
                                                          const typename Combine::Storage* src, size_t head,
                                                          size_t vectors, size_t count) {
  using T = typename Combine::Storage;
  using Vector = Lanes<T>;
  constexpr int kUnroll = kUnrollFor<T>;
  const size_t thread = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;

  Vector* dst_vectors = reinterpret_cast<Vector*>(dst + head);
  const Vector* src_vectors = reinterpret_cast<const Vector*>(src + head);
  for (size_t base = thread; base < vectors; base += stride * kUnroll) {
    Vector a[kUnroll];
    Vector b[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const size_t v = base + k * stride;
      if (v < vectors) {
        a[k] = dst_vectors[v];
        b[k] = src_vectors[v];
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const size_t v = base + k * stride;
      if (v < vectors) {
#pragma unroll
        for (int lane = 0; lane < Vector::kCount; ++lane) {
          a[k].value[lane] = Combine::apply(a[k].value[lane], b[k].value[lane]);
        }
        dst_vectors[v] = a[k];
      }
    }
  }

  const size_t body_end = head + vectors * Vector::kCount;
  const size_t scalars = head + (count - body_end);
  for (size_t e = thread; e < scalars; e += stride) {
    const size_t i = e < head ? e : body_end + (e - head);
    dst[i] = Combine::apply(dst[i], src[i]);
  }
}

template <class Combine>
void launch_typed(void* dst_bytes, const void* src_bytes, size_t count, cudaStream_t stream) {
  using T = typename Combine::Storage;
  constexpr size_t kLanes = Lanes<T>::kCount;
  constexpr size_t kUnroll = kUnrollFor<T>;
  const auto dst_address = reinterpret_cast<uintptr_t>(dst_bytes);
  const auto src_address = reinterpret_cast<uintptr_t>(src_bytes);
  MATEX_REQUIRE(dst_address % sizeof(T) == 0 && src_address % sizeof(T) == 0, MATEX_ERR_INVALID_ARG,
                "launch_reduce: dst and src must be aligned to the element size");

  size_t head = 0;
  size_t vectors = 0;
  if (dst_address % 16 == src_address % 16) {
    head = std::min(count, ((16 - dst_address % 16) % 16) / sizeof(T));
    vectors = (count - head) / kLanes;
  }
  const size_t scalars = count - vectors * kLanes;
  const size_t work = std::max((vectors + kUnroll - 1) / kUnroll, scalars);  // per-thread units
  const size_t blocks = std::clamp<size_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks);

  reduce_kernel<Combine><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<T*>(dst_bytes), static_cast<const T*>(src_bytes), head, vectors, count);
  check_cuda(cudaGetLastError(), "reduce_kernel launch");
}

// Floating dtypes have no bitwise ops.
template <class Op>
void launch_for_floating(matex_dtype_t dtype, void* dst, const void* src, size_t count, cudaStream_t stream) {
  if constexpr (kBitwise<Op>) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "launch_reduce: bitwise ops need an integer or bool dtype");
  } else {
    switch (dtype) {
      case MATEX_FLOAT16: return launch_typed<HalfCombine<Op, Binary16>>(dst, src, count, stream);
      case MATEX_BFLOAT16: return launch_typed<HalfCombine<Op, BFloat16>>(dst, src, count, stream);
      case MATEX_FLOAT32: return launch_typed<NativeCombine<Op, float>>(dst, src, count, stream);
      case MATEX_FLOAT64: return launch_typed<NativeCombine<Op, double>>(dst, src, count, stream);
      default: MATEX_RAISE(MATEX_ERR_INVALID_ARG, "launch_reduce: unknown dtype");
    }
  }
}

template <class Op>
void launch_for_dtype(matex_dtype_t dtype, void* dst, const void* src, size_t count, cudaStream_t stream) {
  switch (dtype) {
    case MATEX_INT8: return launch_typed<NativeCombine<Op, int8_t>>(dst, src, count, stream);
    case MATEX_UINT8: return launch_typed<NativeCombine<Op, uint8_t>>(dst, src, count, stream);
    case MATEX_INT16: return launch_typed<NativeCombine<Op, int16_t>>(dst, src, count, stream);
    case MATEX_UINT16: return launch_typed<NativeCombine<Op, uint16_t>>(dst, src, count, stream);
    case MATEX_INT32: return launch_typed<NativeCombine<Op, int32_t>>(dst, src, count, stream);
    case MATEX_UINT32: return launch_typed<NativeCombine<Op, uint32_t>>(dst, src, count, stream);
    case MATEX_INT64: return launch_typed<NativeCombine<Op, int64_t>>(dst, src, count, stream);
    case MATEX_UINT64: return launch_typed<NativeCombine<Op, uint64_t>>(dst, src, count, stream);
    default: return launch_for_floating<Op>(dtype, dst, src, count, stream);
  }
}

// bool bytes: sum/max as max (a logical or), prod/min as min (a logical and),
// as the CPU kernels and the MPI path do.
void launch_for_bool(matex_op_t op, void* dst, const void* src, size_t count, cudaStream_t stream) {
  switch (op) {
    case MATEX_SUM: case MATEX_AVG: case MATEX_MAX:
      return launch_typed<NativeCombine<Max, uint8_t>>(dst, src, count, stream);
    case MATEX_PROD: case MATEX_MIN: return launch_typed<NativeCombine<Min, uint8_t>>(dst, src, count, stream);
    case MATEX_BAND: return launch_typed<NativeCombine<BitAnd, uint8_t>>(dst, src, count, stream);
    case MATEX_BOR: return launch_typed<NativeCombine<BitOr, uint8_t>>(dst, src, count, stream);
    case MATEX_BXOR: return launch_typed<NativeCombine<BitXor, uint8_t>>(dst, src, count, stream);
    default: MATEX_RAISE(MATEX_ERR_INVALID_ARG, "launch_reduce: unknown op");
  }
}

}  // namespace

void launch_reduce(matex_dtype_t dtype, matex_op_t op, void* dst, const void* src, size_t count,
                   cudaStream_t stream) {
  if (count == 0) return;
  if (dtype == MATEX_BOOL) return launch_for_bool(op, dst, src, count, stream);
  switch (op) {
    case MATEX_SUM: case MATEX_AVG: return launch_for_dtype<Sum>(dtype, dst, src, count, stream);
    case MATEX_PROD: return launch_for_dtype<Prod>(dtype, dst, src, count, stream);
    case MATEX_MIN: return launch_for_dtype<Min>(dtype, dst, src, count, stream);
    case MATEX_MAX: return launch_for_dtype<Max>(dtype, dst, src, count, stream);
    case MATEX_BAND: return launch_for_dtype<BitAnd>(dtype, dst, src, count, stream);
    case MATEX_BOR: return launch_for_dtype<BitOr>(dtype, dst, src, count, stream);
    case MATEX_BXOR: return launch_for_dtype<BitXor>(dtype, dst, src, count, stream);
    default: MATEX_RAISE(MATEX_ERR_INVALID_ARG, "launch_reduce: unknown op");
  }
}

}  // namespace matexcomm::gpu
