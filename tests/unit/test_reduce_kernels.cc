// Unit tests of the reduction kernels against a scalar reference written
// independently here, for every valid (dtype, op) pair, source counts 1..5 and
// a spread of edge counts:
//   - floating types: small integers, reference in double;
//   - integer types: full-width bit patterns (the extremes included), reference
//     in uint64 modular arithmetic truncated to the width (wrap-around), and
//     signed or unsigned comparisons for min/max;
//   - bool: bytes 0/1, reference with logical or/and/xor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/half_float.h"
#include "core/reduce_kernels.h"

namespace matexcomm {
namespace {

constexpr size_t kCounts[] = {0, 1, 2, 7, 31, 1023, 1024, 1025, 4099};
constexpr int kMaxSources = 5;

bool is_floating(matex_dtype_t d) {
  return d == MATEX_FLOAT16 || d == MATEX_BFLOAT16 || d == MATEX_FLOAT32 || d == MATEX_FLOAT64;
}
bool is_bitwise(matex_op_t op) { return op == MATEX_BAND || op == MATEX_BOR || op == MATEX_BXOR; }
bool is_signed_integer(matex_dtype_t d) {
  return d == MATEX_INT8 || d == MATEX_INT16 || d == MATEX_INT32 || d == MATEX_INT64;
}
int width_bits(matex_dtype_t d) { return 8 * static_cast<int>(matex_dtype_size(d)); }

// ---- floating types: small integers, exact in every format ----

int64_t small_value(matex_op_t op, int source, size_t i) {
  if (op == MATEX_PROD) return ((i + source) % 3 == 0) ? 2 : ((i * 7 + source) % 5 == 0 ? -1 : 1);
  return static_cast<int64_t>((i * 31 + source * 17) % 23) - 11;
}

void store_floating(matex_dtype_t dtype, void* base, size_t i, double v) {
  switch (dtype) {
    case MATEX_FLOAT16: static_cast<uint16_t*>(base)[i] = float_to_half(static_cast<float>(v)); break;
    case MATEX_BFLOAT16: static_cast<uint16_t*>(base)[i] = float_to_bf16(static_cast<float>(v)); break;
    case MATEX_FLOAT32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case MATEX_FLOAT64: static_cast<double*>(base)[i] = v; break;
    default: FAIL() << "not a floating dtype";
  }
}

double load_floating(matex_dtype_t dtype, const void* base, size_t i) {
  switch (dtype) {
    case MATEX_FLOAT16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case MATEX_BFLOAT16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case MATEX_FLOAT32: return static_cast<const float*>(base)[i];
    case MATEX_FLOAT64: return static_cast<const double*>(base)[i];
    default: return NAN;
  }
}

double floating_reference(matex_op_t op, int nsrc, size_t i) {
  double acc = static_cast<double>(small_value(op, 0, i));
  for (int s = 1; s < nsrc; ++s) {
    const double v = static_cast<double>(small_value(op, s, i));
    switch (op) {
      case MATEX_SUM: case MATEX_AVG: acc += v; break;  // the kernels sum; the caller divides
      case MATEX_PROD: acc *= v; break;
      case MATEX_MIN: acc = std::min(acc, v); break;
      case MATEX_MAX: acc = std::max(acc, v); break;
      default: ADD_FAILURE() << "no floating reference for this op"; break;
    }
  }
  return acc;
}

// ---- integer types and bool: raw bit patterns ----

uint64_t low_bits(uint64_t bits, int width) { return width == 64 ? bits : bits & ((uint64_t{1} << width) - 1); }

// The width-bit pattern as a signed number (two's complement).
int64_t as_signed(uint64_t bits, int width) {
  const uint64_t v = low_bits(bits, width);
  if (width == 64) return static_cast<int64_t>(v);
  const uint64_t sign = uint64_t{1} << (width - 1);
  return (v & sign) ? static_cast<int64_t>(v) - static_cast<int64_t>(sign << 1) : static_cast<int64_t>(v);
}

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element i of source s: the extremes (min, -1, max, 0, 1) at regular
// positions, pseudo-random bits elsewhere; bool gets 0 or 1.
uint64_t integer_input(matex_dtype_t dtype, int source, size_t i) {
  const uint64_t r = mix(i * 8 + static_cast<uint64_t>(source));
  if (dtype == MATEX_BOOL) return r & 1;
  const int w = width_bits(dtype);
  const uint64_t top = uint64_t{1} << (w - 1);
  switch ((i + static_cast<size_t>(source) * 3) % 13) {
    case 0: return top;                       // signed min / unsigned 2^(w-1)
    case 1: return low_bits(~uint64_t{0}, w);  // -1 / unsigned max
    case 2: return top - 1;                   // signed max
    case 3: return 0;
    case 4: return 1;
    default: return low_bits(r, w);
  }
}

void store_bits(matex_dtype_t dtype, void* base, size_t i, uint64_t bits) {
  switch (matex_dtype_size(dtype)) {
    case 1: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(bits); break;
    case 2: static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(bits); break;
    case 4: static_cast<uint32_t*>(base)[i] = static_cast<uint32_t>(bits); break;
    case 8: static_cast<uint64_t*>(base)[i] = bits; break;
    default: FAIL() << "unexpected element size";
  }
}

uint64_t load_bits(matex_dtype_t dtype, const void* base, size_t i) {
  switch (matex_dtype_size(dtype)) {
    case 1: return static_cast<const uint8_t*>(base)[i];
    case 2: return static_cast<const uint16_t*>(base)[i];
    case 4: return static_cast<const uint32_t*>(base)[i];
    case 8: return static_cast<const uint64_t*>(base)[i];
    default: return 0;
  }
}

uint64_t combine_integers(matex_dtype_t dtype, matex_op_t op, uint64_t a, uint64_t b) {
  const int w = width_bits(dtype);
  const bool less = is_signed_integer(dtype) ? as_signed(b, w) < as_signed(a, w) : low_bits(b, w) < low_bits(a, w);
  switch (op) {
    case MATEX_SUM: return low_bits(a + b, w);  // modular: the wrap-around result
    case MATEX_PROD: return low_bits(a * b, w);
    case MATEX_MIN: return less ? b : a;
    case MATEX_MAX: return less ? a : b;
    case MATEX_BAND: return a & b;
    case MATEX_BOR: return a | b;
    case MATEX_BXOR: return a ^ b;
    default: ADD_FAILURE() << "no integer reference for this op"; return 0;
  }
}

uint64_t combine_bools(matex_op_t op, uint64_t a, uint64_t b) {
  const bool x = a != 0, y = b != 0;
  switch (op) {
    case MATEX_SUM: case MATEX_MAX: case MATEX_BOR: return x || y;
    case MATEX_PROD: case MATEX_MIN: case MATEX_BAND: return x && y;
    case MATEX_BXOR: return x != y;
    default: ADD_FAILURE() << "no bool reference for this op"; return 0;
  }
}

uint64_t integer_reference(matex_dtype_t dtype, matex_op_t op, const std::vector<uint64_t>& inputs) {
  uint64_t acc = inputs[0];
  for (size_t s = 1; s < inputs.size(); ++s) {
    acc = dtype == MATEX_BOOL ? combine_bools(op, acc, inputs[s]) : combine_integers(dtype, op, acc, inputs[s]);
  }
  return acc;
}

// ---- the sweep ----

struct Pair {
  matex_dtype_t dtype;
  matex_op_t op;
};

std::vector<Pair> valid_pairs() {
  std::vector<Pair> pairs;
  for (int d = 0; d < MATEX_DTYPE_COUNT; ++d) {
    for (int o = 0; o < MATEX_OP_COUNT; ++o) {
      const auto dtype = static_cast<matex_dtype_t>(d);
      const auto op = static_cast<matex_op_t>(o);
      if (is_floating(dtype) ? is_bitwise(op) : op == MATEX_AVG) continue;  // rejected by the API
      pairs.push_back({dtype, op});
    }
  }
  return pairs;
}

class ReduceKernels : public ::testing::TestWithParam<Pair> {};

TEST_P(ReduceKernels, MatchScalarReference) {
  const matex_dtype_t dtype = GetParam().dtype;
  const matex_op_t op = GetParam().op;
  const size_t element = matex_dtype_size(dtype);
  const bool floating = is_floating(dtype);
  for (size_t count : kCounts) {
    for (int nsrc = 1; nsrc <= kMaxSources; ++nsrc) {
      std::vector<std::vector<char>> sources(nsrc, std::vector<char>(count * element + 1));
      std::vector<const void*> pointers;
      for (int s = 0; s < nsrc; ++s) {
        for (size_t i = 0; i < count; ++i) {
          if (floating) store_floating(dtype, sources[s].data(), i, static_cast<double>(small_value(op, s, i)));
          else store_bits(dtype, sources[s].data(), i, integer_input(dtype, s, i));
        }
        pointers.push_back(sources[s].data());
      }
      std::vector<char> out(count * element + 1);
      reduce_sources(dtype, op, out.data(), pointers.data(), nsrc, count);
      for (size_t i = 0; i < count; ++i) {
        const std::string where = std::string(matex_dtype_name(dtype)) + " " + matex_op_name(op) + " count " +
                                  std::to_string(count) + " nsrc " + std::to_string(nsrc) + " index " +
                                  std::to_string(i);
        if (floating) {
          ASSERT_EQ(load_floating(dtype, out.data(), i), floating_reference(op, nsrc, i)) << where;
        } else {
          std::vector<uint64_t> inputs;
          for (int s = 0; s < nsrc; ++s) inputs.push_back(integer_input(dtype, s, i));
          ASSERT_EQ(load_bits(dtype, out.data(), i), integer_reference(dtype, op, inputs)) << where;
        }
      }
      if (nsrc == 2) {  // reduce_into is the pairwise form, with inout aliasing the first source
        std::vector<char> inout = sources[0];
        reduce_into(dtype, op, inout.data(), sources[1].data(), count);
        ASSERT_EQ(std::memcmp(inout.data(), out.data(), count * element), 0)
            << matex_dtype_name(dtype) << " " << matex_op_name(op) << " count " << count;
      }
    }
  }
}

std::string pair_name(const ::testing::TestParamInfo<Pair>& info) {
  return std::string(matex_dtype_name(info.param.dtype)) + "_" + matex_op_name(info.param.op);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, ReduceKernels, ::testing::ValuesIn(valid_pairs()), pair_name);

// Every combination of 0/1 over two and three sources, every op: sum and max
// are an or, prod and min an and, and the results stay 0 or 1.
TEST(ReduceKernels, BoolIsLogical) {
  for (int nsrc : {2, 3}) {
    const size_t count = size_t{1} << nsrc;  // element i holds the bits of i across the sources
    std::vector<std::vector<uint8_t>> sources(nsrc, std::vector<uint8_t>(count));
    std::vector<const void*> pointers;
    for (int s = 0; s < nsrc; ++s) {
      for (size_t i = 0; i < count; ++i) sources[s][i] = static_cast<uint8_t>((i >> s) & 1);
      pointers.push_back(sources[s].data());
    }
    for (int o = 0; o < MATEX_OP_COUNT; ++o) {
      const auto op = static_cast<matex_op_t>(o);
      if (op == MATEX_AVG) continue;
      std::vector<uint8_t> out(count, 0xEE);
      reduce_sources(MATEX_BOOL, op, out.data(), pointers.data(), nsrc, count);
      for (size_t i = 0; i < count; ++i) {
        bool any = false, all = true, parity = false;
        for (int s = 0; s < nsrc; ++s) {
          const bool bit = sources[s][i] != 0;
          any = any || bit;
          all = all && bit;
          parity = parity != bit;
        }
        const bool expected = (op == MATEX_SUM || op == MATEX_MAX || op == MATEX_BOR) ? any
                              : op == MATEX_BXOR                                      ? parity
                                                                                      : all;
        EXPECT_EQ(out[i], expected ? 1 : 0) << matex_op_name(op) << " nsrc " << nsrc << " inputs " << i;
      }
    }
  }
}

// Overflowing sums and products wrap as two's complement: the extremes of every
// integer width, reduced as a pair, against the modular reference above.
TEST(ReduceKernels, IntegerExtremesWrapAround) {
  for (matex_dtype_t dtype : {MATEX_INT8, MATEX_UINT8, MATEX_INT16, MATEX_UINT16, MATEX_INT32, MATEX_UINT32,
                              MATEX_INT64, MATEX_UINT64}) {
    const int w = width_bits(dtype);
    const uint64_t top = uint64_t{1} << (w - 1);
    const std::vector<uint64_t> extremes = {top, top - 1, low_bits(~uint64_t{0}, w), top + 1, 2, 0};
    const size_t n = extremes.size() * extremes.size();
    std::vector<char> a(n * matex_dtype_size(dtype)), b(a.size());
    for (size_t i = 0; i < n; ++i) {
      store_bits(dtype, a.data(), i, extremes[i / extremes.size()]);
      store_bits(dtype, b.data(), i, extremes[i % extremes.size()]);
    }
    for (matex_op_t op : {MATEX_SUM, MATEX_PROD, MATEX_MIN, MATEX_MAX}) {
      std::vector<char> inout = a;
      reduce_into(dtype, op, inout.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) {
        const uint64_t x = extremes[i / extremes.size()], y = extremes[i % extremes.size()];
        EXPECT_EQ(load_bits(dtype, inout.data(), i), integer_reference(dtype, op, {x, y}))
            << matex_dtype_name(dtype) << " " << matex_op_name(op) << " of " << x << " and " << y;
      }
    }
  }
}

// The API rejects bitwise ops on floating dtypes; a kernel reached anyway
// reports an internal error instead of reinterpreting the bits.
TEST(ReduceKernels, BitwiseOnFloatingIsAnInternalError) {
  for (matex_dtype_t dtype : {MATEX_FLOAT16, MATEX_BFLOAT16, MATEX_FLOAT32, MATEX_FLOAT64}) {
    for (matex_op_t op : {MATEX_BAND, MATEX_BOR, MATEX_BXOR}) {
      double a[2] = {1, 2}, b[2] = {3, 4};
      try {
        reduce_into(dtype, op, a, b, 1);
        ADD_FAILURE() << matex_op_name(op) << " on " << matex_dtype_name(dtype) << " was accepted";
      } catch (const Error& error) {
        EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL);
      }
    }
  }
}

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
