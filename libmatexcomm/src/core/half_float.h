// half_float.h - scalar conversions between float32 and the two 16-bit float
// formats (IEEE binary16 and bfloat16), round-to-nearest-even, with subnormals,
// infinities and NaN preserved. Header-only so the reduction loops inline them.
#pragma once

#include <cstdint>
#include <cstring>

namespace matexcomm {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float value) {
  uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);
    // Subnormal: value = mantissa * 2^-24.
    float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t float_to_half(float value) {
  uint32_t bits = float_bits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs_bits < 0x38800000u) {
    // Result is subnormal or zero: scale so that the integer part is the
    // binary16 mantissa and let the FPU round to nearest even.
    float magnitude = bits_float(abs_bits) * 16777216.0f;  // * 2^24
    uint32_t mantissa = static_cast<uint32_t>(__builtin_rintf(magnitude));
    return static_cast<uint16_t>(sign | mantissa);
  }
  uint32_t rounded = abs_bits + 0x0fffu + ((abs_bits >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

}  // namespace matexcomm
