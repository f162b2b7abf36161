// test_exact_values.cc - checks the test suite's own float16/bfloat16
// encoders (exact_values.h) against bit patterns from the IEEE 754 and
// bfloat16 definitions, so a wrong reference can't hide a library bug.
// Local only: no collective is called.
#include <gtest/gtest.h>

#include <stdexcept>

#include "exact_values.h"

namespace matex_test {
namespace {

TEST(ExactValues, HalfEncodingOfSmallIntegers) {
  EXPECT_EQ(int_to_half_bits(0), 0x0000);
  EXPECT_EQ(int_to_half_bits(1), 0x3c00);
  EXPECT_EQ(int_to_half_bits(-1), 0xbc00);
  EXPECT_EQ(int_to_half_bits(2), 0x4000);
  EXPECT_EQ(int_to_half_bits(3), 0x4200);
  EXPECT_EQ(int_to_half_bits(-100), 0xd640);
  EXPECT_EQ(int_to_half_bits(2047), 0x67ff);
  EXPECT_THROW(int_to_half_bits(2048), std::invalid_argument);
  for (int v = -2047; v <= 2047; ++v) EXPECT_EQ(half_bits_to_double(int_to_half_bits(v)), v) << v;
  EXPECT_EQ(half_bits_to_double(0x0001), 1.0 / (1 << 24));  // smallest subnormal
  EXPECT_EQ(half_bits_to_double(0x7bff), 65504.0);          // largest normal
}

TEST(ExactValues, BFloat16EncodingOfSmallIntegers) {
  EXPECT_EQ(int_to_bfloat16_bits(0), 0x0000);
  EXPECT_EQ(int_to_bfloat16_bits(1), 0x3f80);
  EXPECT_EQ(int_to_bfloat16_bits(-2), 0xc000);
  EXPECT_EQ(int_to_bfloat16_bits(255), 0x437f);
  EXPECT_THROW(int_to_bfloat16_bits(256), std::invalid_argument);
  for (int v = -255; v <= 255; ++v) EXPECT_EQ(bfloat16_bits_to_double(int_to_bfloat16_bits(v)), v) << v;
}

TEST(ExactValues, TableEncodingMatchesDirectEncoding) {
  for (int v = -300; v <= 300; ++v) {
    EXPECT_EQ(HalfTraits::encode(v), int_to_half_bits(v)) << v;
    if (v > -256 && v < 256) {
      EXPECT_EQ(BFloat16Traits::encode(v), int_to_bfloat16_bits(v)) << v;
    }
  }
}

}  // namespace
}  // namespace matex_test
