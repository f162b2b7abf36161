#include "core/scaling.h"

#include <cstdint>

#include "core/error.h"
#include "core/half_float.h"

namespace matexcomm {

namespace {

template <class T>
void scale_native(T* data, size_t count, T factor) {
  for (size_t i = 0; i < count; ++i) data[i] *= factor;
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void scale_16bit(uint16_t* data, size_t count, float factor) {
  for (size_t i = 0; i < count; ++i) data[i] = Narrow(Widen(data[i]) * factor);
}

}  // namespace

void scale_elements(matex_dtype_t dtype, void* data, size_t count, double factor) {
  if (factor == 1.0 || count == 0) return;
  switch (dtype) {
    case MATEX_FLOAT32: return scale_native(static_cast<float*>(data), count, static_cast<float>(factor));
    case MATEX_FLOAT64: return scale_native(static_cast<double*>(data), count, factor);
    case MATEX_FLOAT16:
      return scale_16bit<half_to_float, float_to_half>(static_cast<uint16_t*>(data), count, static_cast<float>(factor));
    case MATEX_BFLOAT16:
      return scale_16bit<bf16_to_float, float_to_bf16>(static_cast<uint16_t*>(data), count, static_cast<float>(factor));
    default:
      MATEX_RAISE(MATEX_ERR_INVALID_ARG, "scaling needs a floating dtype");
  }
}

}  // namespace matexcomm
