// element_codec.cc - see element_codec.h.
#include "element_codec.h"

#include <cstdint>
#include <cstring>

#include "core/half_float.h"

namespace matexbench {
namespace {

template <typename T>
void store_as(void* data, size_t index, T value) {
  std::memcpy(static_cast<char*>(data) + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
T load_as(const void* data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + index * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

bool dtype_is_float(matex_dtype_t dtype) {
  return dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 || dtype == MATEX_FLOAT32 || dtype == MATEX_FLOAT64;
}

bool dtype_is_signed(matex_dtype_t dtype) {
  return dtype != MATEX_UINT8 && dtype != MATEX_UINT16 && dtype != MATEX_UINT32 && dtype != MATEX_UINT64 &&
         dtype != MATEX_BOOL;
}

void store_element(matex_dtype_t dtype, void* data, size_t index, double value) {
  switch (dtype) {
    case MATEX_INT8: store_as<int8_t>(data, index, static_cast<int8_t>(value)); break;
    case MATEX_UINT8: store_as<uint8_t>(data, index, static_cast<uint8_t>(value)); break;
    case MATEX_INT16: store_as<int16_t>(data, index, static_cast<int16_t>(value)); break;
    case MATEX_UINT16: store_as<uint16_t>(data, index, static_cast<uint16_t>(value)); break;
    case MATEX_INT32: store_as<int32_t>(data, index, static_cast<int32_t>(value)); break;
    case MATEX_UINT32: store_as<uint32_t>(data, index, static_cast<uint32_t>(value)); break;
    case MATEX_INT64: store_as<int64_t>(data, index, static_cast<int64_t>(value)); break;
    case MATEX_UINT64: store_as<uint64_t>(data, index, static_cast<uint64_t>(value)); break;
    case MATEX_BOOL: store_as<uint8_t>(data, index, value != 0.0 ? 1 : 0); break;
    case MATEX_FLOAT16: store_as<uint16_t>(data, index, matexcomm::float_to_half(static_cast<float>(value))); break;
    case MATEX_BFLOAT16: store_as<uint16_t>(data, index, matexcomm::float_to_bf16(static_cast<float>(value))); break;
    case MATEX_FLOAT32: store_as<float>(data, index, static_cast<float>(value)); break;
    case MATEX_FLOAT64: store_as<double>(data, index, value); break;
    default: break;
  }
}

double load_element(matex_dtype_t dtype, const void* data, size_t index) {
  switch (dtype) {
    case MATEX_INT8: return load_as<int8_t>(data, index);
    case MATEX_UINT8: return load_as<uint8_t>(data, index);
    case MATEX_INT16: return load_as<int16_t>(data, index);
    case MATEX_UINT16: return load_as<uint16_t>(data, index);
    case MATEX_INT32: return load_as<int32_t>(data, index);
    case MATEX_UINT32: return load_as<uint32_t>(data, index);
    case MATEX_INT64: return static_cast<double>(load_as<int64_t>(data, index));
    case MATEX_UINT64: return static_cast<double>(load_as<uint64_t>(data, index));
    case MATEX_BOOL: return load_as<uint8_t>(data, index);
    case MATEX_FLOAT16: return matexcomm::half_to_float(load_as<uint16_t>(data, index));
    case MATEX_BFLOAT16: return matexcomm::bf16_to_float(load_as<uint16_t>(data, index));
    case MATEX_FLOAT32: return load_as<float>(data, index);
    case MATEX_FLOAT64: return load_as<double>(data, index);
    default: return 0.0;
  }
}

}  // namespace matexbench
