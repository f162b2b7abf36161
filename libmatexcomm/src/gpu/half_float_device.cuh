// half_float_device.cuh - IEEE binary16 and bfloat16 on the device, kept as
// raw bits and computed in float32 (the reduce and scale kernels share them).
// Rounding is to nearest even; NaNs keep their sign through widen and narrow
// and are written as core/half_float.h writes them on the CPU (the hardware
// conversions may make them canonical), so MIN/MAX results match the CPU's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace matexcomm::gpu {

struct Binary16 {
  using Store = uint16_t;
  using Compute = float;
  __device__ static float widen(uint16_t h) {
    if ((h & 0x7fffu) > 0x7c00u) return __uint_as_float((static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7fc00000u);
    return __half2float(__ushort_as_half(h));
  }
  __device__ static uint16_t narrow(float value) {
    uint32_t bits = __float_as_uint(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7e00u);
    return __half_as_ushort(__float2half_rn(value));
  }
};

struct BFloat16 {
  using Store = uint16_t;
  using Compute = float;
  __device__ static float widen(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }
  __device__ static uint16_t narrow(float value) {
    uint32_t bits = __float_as_uint(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  }
};

}  // namespace matexcomm::gpu
