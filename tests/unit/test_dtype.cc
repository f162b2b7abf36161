// Unit tests of the dtype/op tables and their argument checks.
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/error.h"

namespace matexcomm {
namespace {

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(dtype_size(MATEX_INT8), 1u);
  EXPECT_EQ(dtype_size(MATEX_UINT8), 1u);
  EXPECT_EQ(dtype_size(MATEX_INT32), 4u);
  EXPECT_EQ(dtype_size(MATEX_INT64), 8u);
  EXPECT_EQ(dtype_size(MATEX_FLOAT16), 2u);
  EXPECT_EQ(dtype_size(MATEX_BFLOAT16), 2u);
  EXPECT_EQ(dtype_size(MATEX_FLOAT32), 4u);
  EXPECT_EQ(dtype_size(MATEX_FLOAT64), 8u);
  EXPECT_EQ(dtype_size(static_cast<matex_dtype_t>(99)), 0u);
  EXPECT_STREQ(dtype_name(MATEX_BFLOAT16), "bfloat16");
  EXPECT_STREQ(op_name(MATEX_AVG), "avg");
  EXPECT_STREQ(dtype_name(static_cast<matex_dtype_t>(-1)), "unknown");
}

TEST(Dtype, AvgNeedsFloatingType) {
  for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
    auto dtype = static_cast<matex_dtype_t>(d);
    if (dtype_is_floating(dtype)) {
      EXPECT_NO_THROW(require_reduction(dtype, MATEX_AVG));
    } else {
      try {
        require_reduction(dtype, MATEX_AVG);
        ADD_FAILURE() << "avg accepted for " << dtype_name(dtype);
      } catch (const Error& error) {
        EXPECT_EQ(error.status(), MATEX_ERR_INVALID_ARG);
        EXPECT_NE(error.message().find("op = avg"), std::string::npos);
        EXPECT_NE(error.message().find(dtype_name(dtype)), std::string::npos);
      }
    }
  }
}

TEST(Dtype, UnknownValuesAreNamed) {
  try {
    require_reduction(static_cast<matex_dtype_t>(42), MATEX_SUM);
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("dtype = 42"), std::string::npos) << error.message();
  }
  try {
    require_reduction(MATEX_FLOAT32, static_cast<matex_op_t>(7));
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("op = 7"), std::string::npos) << error.message();
  }
}

}  // namespace
}  // namespace matexcomm
