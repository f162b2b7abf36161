// Unit tests of the 16-bit float conversions against an independent
// reference: binary16 and bfloat16 values decoded from their bit fields with
// ldexp, and round-to-nearest-even checked on every float16 midpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "core/half_float.h"

namespace matexcomm {
namespace {

double decode_binary16(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(HalfFloat, EveryBinary16DecodesExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    double expected = decode_binary16(static_cast<uint16_t>(h));
    float got = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), expected) << "bits " << h;
    }
  }
}

TEST(HalfFloat, EveryFiniteBinary16RoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    if (((h >> 10) & 0x1f) == 31 && (h & 0x3ff)) continue;  // NaN payloads
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(HalfFloat, MidpointsRoundToEven) {
  // Between consecutive positive finite halves a and a+1, the midpoint must go
  // to the one with an even mantissa.
  for (uint32_t a = 0; a < 0x7bff; ++a) {
    double mid = (decode_binary16(static_cast<uint16_t>(a)) + decode_binary16(static_cast<uint16_t>(a + 1))) / 2;
    uint16_t expected = (a % 2 == 0) ? a : a + 1;
    ASSERT_EQ(float_to_half(static_cast<float>(mid)), expected) << "between " << a << " and " << a + 1;
  }
}

TEST(HalfFloat, OverflowAndSpecials) {
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(70000.0f), 0x7c00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
}

TEST(BFloat16, RoundTripAndRounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint32_t exponent = (b >> 7) & 0xff;
    if (exponent == 0xff && (b & 0x7f)) continue;
    ASSERT_EQ(float_to_bf16(bf16_to_float(static_cast<uint16_t>(b))), b) << b;
  }
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to even (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bf16_to_float(0x4040), 3.0f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

}  // namespace
}  // namespace matexcomm
