// exact_values.h - test-side storage of small integers in every matexcomm
// dtype, written independently of the library: a per-dtype traits struct
// (storage type, encode an exact small integer, decode to double) and a
// dispatcher from matex_dtype_t to those traits.
//
// float16 and bfloat16 are encoded by hand: the tests only ever store
// integers with |n| <= 256, which both formats hold exactly. bool stores the
// byte it is given (the reduction patterns give it 0 or 1).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "matexcomm/matexcomm.h"

namespace matex_test {

// Bit position of the highest set bit of m > 0.
inline int highest_bit(uint32_t m) { return 31 - __builtin_clz(m); }

// IEEE binary16 bits of the integer n; requires |n| < 2048 (11 significant bits).
inline uint16_t int_to_half_bits(int64_t n) {
  if (n == 0) return 0;
  const uint16_t sign = n < 0 ? 0x8000 : 0;
  const uint32_t m = static_cast<uint32_t>(n < 0 ? -n : n);
  if (m >= 2048) throw std::invalid_argument("int_to_half_bits: " + std::to_string(n) + " is not exact");
  const int e = highest_bit(m);
  const uint16_t exponent = static_cast<uint16_t>((e + 15) << 10);
  const uint16_t mantissa = static_cast<uint16_t>((m << (10 - e)) & 0x3ff);
  return sign | exponent | mantissa;
}

// bfloat16 bits of the integer n; requires |n| < 256 (8 significant bits).
inline uint16_t int_to_bfloat16_bits(int64_t n) {
  if (n == 0) return 0;
  const uint16_t sign = n < 0 ? 0x8000 : 0;
  const uint32_t m = static_cast<uint32_t>(n < 0 ? -n : n);
  if (m >= 256) throw std::invalid_argument("int_to_bfloat16_bits: " + std::to_string(n) + " is not exact");
  const int e = highest_bit(m);
  const uint16_t exponent = static_cast<uint16_t>((e + 127) << 7);
  const uint16_t mantissa = static_cast<uint16_t>((m << (7 - e)) & 0x7f);
  return sign | exponent | mantissa;
}

// Any binary16 bit pattern to double (normals, subnormals, inf, NaN).
inline double half_bits_to_double(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * mantissa * (1.0 / (1 << 24));
  if (exponent == 31) return mantissa ? __builtin_nan("") : sign * __builtin_inf();
  const double scale = exponent >= 15 ? double(1u << (exponent - 15)) : 1.0 / double(1u << (15 - exponent));
  return sign * (1.0 + mantissa / 1024.0) * scale;
}

// Any bfloat16 bit pattern to double: it is the top half of a float32.
inline double bfloat16_bits_to_double(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// Encoding a small integer through a lookup table keeps the 4M-element loops cheap.
template <uint16_t (*Encode)(int64_t)>
inline uint16_t table_encode(int64_t n) {
  constexpr int kLimit = 255;
  struct Table {
    uint16_t bits[2 * kLimit + 1];
    Table() {
      for (int v = -kLimit; v <= kLimit; ++v) bits[v + kLimit] = Encode(v);
    }
  };
  static const Table table;
  if (n < -kLimit || n > kLimit) return Encode(n);
  return table.bits[n + kLimit];
}

template <class T, matex_dtype_t D, bool Floating>
struct PlainTraits {
  using Storage = T;
  static constexpr matex_dtype_t kDtype = D;
  static constexpr bool kFloating = Floating;
  static constexpr bool kUnsigned = T(-1) > T(0);
  static constexpr bool kBool = false;
  static Storage encode(int64_t n) { return static_cast<T>(n); }
  static double decode(Storage s) { return static_cast<double>(s); }
};

struct HalfTraits {
  using Storage = uint16_t;
  static constexpr matex_dtype_t kDtype = MATEX_FLOAT16;
  static constexpr bool kFloating = true;
  static constexpr bool kUnsigned = false;
  static constexpr bool kBool = false;
  static Storage encode(int64_t n) { return table_encode<int_to_half_bits>(n); }
  static double decode(Storage s) { return half_bits_to_double(s); }
};

struct BFloat16Traits {
  using Storage = uint16_t;
  static constexpr matex_dtype_t kDtype = MATEX_BFLOAT16;
  static constexpr bool kFloating = true;
  static constexpr bool kUnsigned = false;
  static constexpr bool kBool = false;
  static Storage encode(int64_t n) { return table_encode<int_to_bfloat16_bits>(n); }
  static double decode(Storage s) { return bfloat16_bits_to_double(s); }
};

// bool is one byte. Reduction inputs and results are 0 or 1; the byte is kept
// as given (not squashed to 0/1) so that the tests' guard values (77, 76, ...)
// after a buffer stay recognizable.
struct BoolTraits {
  using Storage = uint8_t;
  static constexpr matex_dtype_t kDtype = MATEX_BOOL;
  static constexpr bool kFloating = false;
  static constexpr bool kUnsigned = true;
  static constexpr bool kBool = true;
  static Storage encode(int64_t n) { return static_cast<uint8_t>(n); }
  static double decode(Storage s) { return static_cast<double>(s); }
};

// Calls fn(Traits{}) with the traits of dtype.
template <class Fn>
void with_dtype(matex_dtype_t dtype, Fn&& fn) {
  switch (dtype) {
    case MATEX_INT8: return fn(PlainTraits<int8_t, MATEX_INT8, false>{});
    case MATEX_UINT8: return fn(PlainTraits<uint8_t, MATEX_UINT8, false>{});
    case MATEX_INT16: return fn(PlainTraits<int16_t, MATEX_INT16, false>{});
    case MATEX_UINT16: return fn(PlainTraits<uint16_t, MATEX_UINT16, false>{});
    case MATEX_INT32: return fn(PlainTraits<int32_t, MATEX_INT32, false>{});
    case MATEX_UINT32: return fn(PlainTraits<uint32_t, MATEX_UINT32, false>{});
    case MATEX_INT64: return fn(PlainTraits<int64_t, MATEX_INT64, false>{});
    case MATEX_UINT64: return fn(PlainTraits<uint64_t, MATEX_UINT64, false>{});
    case MATEX_BOOL: return fn(BoolTraits{});
    case MATEX_FLOAT16: return fn(HalfTraits{});
    case MATEX_BFLOAT16: return fn(BFloat16Traits{});
    case MATEX_FLOAT32: return fn(PlainTraits<float, MATEX_FLOAT32, true>{});
    case MATEX_FLOAT64: return fn(PlainTraits<double, MATEX_FLOAT64, true>{});
    default: throw std::invalid_argument("with_dtype: unknown dtype " + std::to_string(int(dtype)));
  }
}

inline bool is_floating(matex_dtype_t dtype) {
  return dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 || dtype == MATEX_FLOAT32 || dtype == MATEX_FLOAT64;
}

}  // namespace matex_test
