// Unit tests of the reduction kernels against a scalar reference computed in
// double (floating types) or with explicit wrap-around (integers), for every
// dtype, op, source count and a spread of edge counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half_float.h"
#include "core/reduce_kernels.h"

namespace matexcomm {
namespace {

// Small integers whose sums and products are exact in every dtype.
int64_t input_value(matex_op_t op, int source, size_t i) {
  if (op == MATEX_PROD) return ((i + source) % 3 == 0) ? 2 : ((i * 7 + source) % 5 == 0 ? -1 : 1);
  return static_cast<int64_t>((i * 31 + source * 17) % 23) - 11;
}

bool is_unsigned(matex_dtype_t d) { return d == MATEX_UINT8; }

void store(matex_dtype_t dtype, void* base, size_t i, double v) {
  switch (dtype) {
    case MATEX_INT8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); break;
    case MATEX_UINT8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); break;
    case MATEX_INT32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case MATEX_INT64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case MATEX_FLOAT16: static_cast<uint16_t*>(base)[i] = float_to_half(static_cast<float>(v)); break;
    case MATEX_BFLOAT16: static_cast<uint16_t*>(base)[i] = float_to_bf16(static_cast<float>(v)); break;
    case MATEX_FLOAT32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case MATEX_FLOAT64: static_cast<double*>(base)[i] = v; break;
    default: break;
  }
}

double load(matex_dtype_t dtype, const void* base, size_t i) {
  switch (dtype) {
    case MATEX_INT8: return static_cast<const int8_t*>(base)[i];
    case MATEX_UINT8: return static_cast<const uint8_t*>(base)[i];
    case MATEX_INT32: return static_cast<const int32_t*>(base)[i];
    case MATEX_INT64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case MATEX_FLOAT16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case MATEX_BFLOAT16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case MATEX_FLOAT32: return static_cast<const float*>(base)[i];
    case MATEX_FLOAT64: return static_cast<const double*>(base)[i];
    default: return NAN;
  }
}

double reference(matex_dtype_t dtype, matex_op_t op, int nsrc, size_t i) {
  auto value = [&](int s) {
    int64_t v = input_value(op, s, i);
    return is_unsigned(dtype) ? static_cast<double>(static_cast<uint8_t>(v)) : static_cast<double>(v);
  };
  double acc = value(0);
  for (int s = 1; s < nsrc; ++s) {
    double v = value(s);
    switch (op) {
      case MATEX_SUM: case MATEX_AVG: acc += v; break;
      case MATEX_PROD: acc *= v; break;
      case MATEX_MIN: acc = std::min(acc, v); break;
      case MATEX_MAX: acc = std::max(acc, v); break;
      default: break;
    }
  }
  if (is_unsigned(dtype)) acc = static_cast<double>(static_cast<uint8_t>(static_cast<int64_t>(acc)));
  return acc;
}

class ReduceKernels : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ReduceKernels, MatchScalarReference) {
  auto dtype = static_cast<matex_dtype_t>(std::get<0>(GetParam()));
  auto op = static_cast<matex_op_t>(std::get<1>(GetParam()));
  const size_t element = matex_dtype_size(dtype);
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{1025}, size_t{4099}}) {
    for (int nsrc = 1; nsrc <= 5; ++nsrc) {
      std::vector<std::vector<char>> sources(nsrc, std::vector<char>(count * element + 1));
      std::vector<const void*> pointers;
      for (int s = 0; s < nsrc; ++s) {
        for (size_t i = 0; i < count; ++i) {
          int64_t v = input_value(op, s, i);
          store(dtype, sources[s].data(), i, is_unsigned(dtype) ? static_cast<uint8_t>(v) : static_cast<double>(v));
        }
        pointers.push_back(sources[s].data());
      }
      std::vector<char> out(count * element + 1);
      reduce_sources(dtype, op, out.data(), pointers.data(), nsrc, count);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(load(dtype, out.data(), i), reference(dtype, op, nsrc, i))
            << matex_dtype_name(dtype) << " " << matex_op_name(op) << " count " << count << " nsrc " << nsrc
            << " index " << i;
      }
      if (nsrc == 2) {  // reduce_into is the pairwise form
        std::vector<char> inout = sources[0];
        reduce_into(dtype, op, inout.data(), sources[1].data(), count);
        ASSERT_EQ(std::memcmp(inout.data(), out.data(), count * element), 0);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, ReduceKernels,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(MATEX_DTYPE_COUNT)),
                                            ::testing::Range(0, 4)));

TEST(ReduceKernels, AliasedFirstSourceIsAllowed) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  const void* sources[2] = {a.data(), b.data()};
  reduce_sources(MATEX_FLOAT32, MATEX_SUM, a.data(), sources, 2, a.size());
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
}

TEST(ReduceKernels, Float16AccumulatesInFloat32) {
  // 2048 + 1 + 1 is 2050 in float32, but 2048 in float16 if rounded after each add.
  const uint16_t big = float_to_half(2048.0f), one = float_to_half(1.0f);
  std::vector<uint16_t> s0 = {big}, s1 = {one}, s2 = {one}, out(1);
  const void* sources[3] = {s0.data(), s1.data(), s2.data()};
  reduce_sources(MATEX_FLOAT16, MATEX_SUM, out.data(), sources, 3, 1);
  EXPECT_EQ(half_to_float(out[0]), 2050.0f);
}

TEST(DivideElements, ExactQuotients) {
  std::vector<double> d = {6, -9, 0};
  divide_elements(MATEX_FLOAT64, d.data(), d.size(), 3);
  EXPECT_EQ(d, (std::vector<double>{2, -3, 0}));
  std::vector<uint16_t> h = {float_to_half(12.0f), float_to_half(-4.0f)};
  divide_elements(MATEX_FLOAT16, h.data(), h.size(), 4);
  EXPECT_EQ(half_to_float(h[0]), 3.0f);
  EXPECT_EQ(half_to_float(h[1]), -1.0f);
  std::vector<uint16_t> b = {float_to_bf16(9.0f)};
  divide_elements(MATEX_BFLOAT16, b.data(), b.size(), 3);
  EXPECT_EQ(bf16_to_float(b[0]), 3.0f);
}

}  // namespace
}  // namespace matexcomm

namespace matexcomm {
namespace {

// The vectorised 16-bit conversions (F16C on x86) must agree bit for bit with
// the scalar reference of half_float.h: every binary16 value round-trips, and
// sums that need rounding round the same way.
TEST(ReduceKernels, Float16VectorPathMatchesScalarConversions) {
  std::vector<uint16_t> all(65536), out(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  const void* one[1] = {all.data()};
  reduce_sources(MATEX_FLOAT16, MATEX_MAX, out.data(), one, 1, all.size());
  for (uint32_t h = 0; h < 65536; ++h) {
    if (((h >> 10) & 0x1f) == 31 && (h & 0x3ff)) continue;  // NaN payloads may be quieted
    ASSERT_EQ(out[h], h) << "binary16 bits " << h << " did not round-trip (" << reduce_kernel_isa() << ")";
  }
  std::vector<uint16_t> a(65536), b(65536);
  uint32_t state = 12345;
  for (size_t i = 0; i < a.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    a[i] = static_cast<uint16_t>(state >> 16) & 0x7bff;  // finite, non-negative
    b[i] = static_cast<uint16_t>(state) & 0x7bff;
  }
  const void* two[2] = {a.data(), b.data()};
  reduce_sources(MATEX_FLOAT16, MATEX_SUM, out.data(), two, 2, a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(out[i], float_to_half(half_to_float(a[i]) + half_to_float(b[i]))) << "index " << i;
  }
}

}  // namespace
}  // namespace matexcomm
