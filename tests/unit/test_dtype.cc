// Unit tests of the dtype/op tables and their argument checks.
#include <gtest/gtest.h>

#include <string>

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
  EXPECT_EQ(dtype_size(MATEX_BOOL), 1u);
  EXPECT_EQ(dtype_size(MATEX_INT16), 2u);
  EXPECT_EQ(dtype_size(MATEX_UINT16), 2u);
  EXPECT_EQ(dtype_size(MATEX_UINT32), 4u);
  EXPECT_EQ(dtype_size(MATEX_UINT64), 8u);
  EXPECT_EQ(dtype_size(static_cast<matex_dtype_t>(99)), 0u);
  EXPECT_EQ(dtype_size(MATEX_DTYPE_COUNT), 0u);
  EXPECT_STREQ(dtype_name(MATEX_BFLOAT16), "bfloat16");
  EXPECT_STREQ(op_name(MATEX_AVG), "avg");
  EXPECT_STREQ(dtype_name(static_cast<matex_dtype_t>(-1)), "unknown");
  EXPECT_STREQ(dtype_name(MATEX_BOOL), "bool");
  EXPECT_STREQ(dtype_name(MATEX_INT16), "int16");
  EXPECT_STREQ(dtype_name(MATEX_UINT16), "uint16");
  EXPECT_STREQ(dtype_name(MATEX_UINT32), "uint32");
  EXPECT_STREQ(dtype_name(MATEX_UINT64), "uint64");
  EXPECT_STREQ(op_name(MATEX_BAND), "band");
  EXPECT_STREQ(op_name(MATEX_BOR), "bor");
  EXPECT_STREQ(op_name(MATEX_BXOR), "bxor");
  EXPECT_STREQ(op_name(MATEX_OP_COUNT), "unknown");
  EXPECT_STREQ(dtype_name(MATEX_DTYPE_COUNT), "unknown");
}

// Every value below the count is valid, has a size and a name of its own.
TEST(Dtype, EveryEnumeratorIsDescribed) {
  for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
    const auto dtype = static_cast<matex_dtype_t>(d);
    EXPECT_TRUE(dtype_valid(dtype)) << d;
    EXPECT_GT(dtype_size(dtype), 0u) << d;
    EXPECT_STRNE(dtype_name(dtype), "unknown") << d;
    for (int e = 0; e < d; ++e) EXPECT_STRNE(dtype_name(dtype), dtype_name(static_cast<matex_dtype_t>(e)));
  }
  EXPECT_FALSE(dtype_valid(MATEX_DTYPE_COUNT));
  for (int o = 0; o < MATEX_OP_COUNT; ++o) {
    const auto op = static_cast<matex_op_t>(o);
    EXPECT_TRUE(op_valid(op)) << o;
    EXPECT_STRNE(op_name(op), "unknown") << o;
    for (int e = 0; e < o; ++e) EXPECT_STRNE(op_name(op), op_name(static_cast<matex_op_t>(e)));
  }
  EXPECT_FALSE(op_valid(MATEX_OP_COUNT));
}

TEST(Dtype, BitwiseOpsNeedIntegerOrBool) {
  for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
    const auto dtype = static_cast<matex_dtype_t>(d);
    for (matex_op_t op : {MATEX_BAND, MATEX_BOR, MATEX_BXOR}) {
      EXPECT_TRUE(op_is_bitwise(op));
      if (!dtype_is_floating(dtype)) {
        EXPECT_NO_THROW(require_reduction(dtype, op)) << op_name(op) << " on " << dtype_name(dtype);
        continue;
      }
      try {
        require_reduction(dtype, op);
        ADD_FAILURE() << op_name(op) << " accepted for " << dtype_name(dtype);
      } catch (const Error& error) {
        EXPECT_EQ(error.status(), MATEX_ERR_INVALID_ARG);
        EXPECT_NE(error.message().find(std::string("op = ") + op_name(op)), std::string::npos) << error.message();
        EXPECT_NE(error.message().find(dtype_name(dtype)), std::string::npos) << error.message();
      }
    }
  }
  for (matex_op_t op : {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX, MATEX_AVG}) EXPECT_FALSE(op_is_bitwise(op));
}

// sum, prod, min and max work on every dtype (bool included).
TEST(Dtype, ArithmeticOpsWorkOnEveryDtype) {
  for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
    for (matex_op_t op : {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX}) {
      EXPECT_NO_THROW(require_reduction(static_cast<matex_dtype_t>(d), op));
      EXPECT_EQ(reduction_problem(static_cast<matex_dtype_t>(d), op), "");
    }
  }
}

TEST(Dtype, AvgNeedsFloatingType) {
  for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
    auto dtype = static_cast<matex_dtype_t>(d);
    EXPECT_EQ(dtype_is_floating(dtype), dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 ||
                                            dtype == MATEX_FLOAT32 || dtype == MATEX_FLOAT64)
        << dtype_name(dtype);  // bool is not floating, so avg rejects it
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
    require_reduction(MATEX_FLOAT32, MATEX_OP_COUNT);
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("op = " + std::to_string(MATEX_OP_COUNT)), std::string::npos) << error.message();
  }
}

}  // namespace
}  // namespace matexcomm
