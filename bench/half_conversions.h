// half_conversions.h - the bench's own float16/bfloat16 <-> float32
// conversions (round to nearest even), deliberately independent of the
// library's half_float.h so the reference values and the MPI baseline do not
// share code with what they check. float16 uses the compiler's _Float16
// (GCC >= 12 on x86-64 and aarch64), bfloat16 a bit-level rounding.
#pragma once

#include <cstdint>
#include <cstring>

namespace matexbench {

inline float f16_to_f32(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

inline uint16_t f32_to_f16(float value) {
  _Float16 h = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

inline float bf16_to_f32(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

inline uint16_t f32_to_bf16(float value) {
  uint32_t wide;
  std::memcpy(&wide, &value, sizeof wide);
  if ((wide & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((wide >> 16) | 0x0040u);  // NaN stays NaN
  uint32_t lsb = (wide >> 16) & 1u;  // ties go to the even neighbour
  return static_cast<uint16_t>((wide + 0x7fffu + lsb) >> 16);
}

}  // namespace matexbench
