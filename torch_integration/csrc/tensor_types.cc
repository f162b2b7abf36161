#include "tensor_types.h"

#include <c10/util/Exception.h>

#include "torch_compat.h"

#include <string>

namespace matex_torch {

namespace {

bool native_dtype(at::ScalarType type, matex_dtype_t* out) {
  switch (type) {
    case at::kBool: *out = MATEX_BOOL; return true;
    case at::kByte: *out = MATEX_UINT8; return true;
    case at::kChar: *out = MATEX_INT8; return true;
    case at::kShort: *out = MATEX_INT16; return true;
    case at::kInt: *out = MATEX_INT32; return true;
    case at::kLong: *out = MATEX_INT64; return true;
    case at::kUInt16: *out = MATEX_UINT16; return true;
    case at::kUInt32: *out = MATEX_UINT32; return true;
    case at::kUInt64: *out = MATEX_UINT64; return true;
    case at::kHalf: *out = MATEX_FLOAT16; return true;
    case at::kBFloat16: *out = MATEX_BFLOAT16; return true;
    case at::kFloat: *out = MATEX_FLOAT32; return true;
    case at::kDouble: *out = MATEX_FLOAT64; return true;
    default: return false;
  }
}

bool is_floating(matex_dtype_t dtype) {
  return dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 || dtype == MATEX_FLOAT32 || dtype == MATEX_FLOAT64;
}

std::string where(const char* collective, at::ScalarType type) {
  return std::string(" (") + collective + " on a " + c10::toString(type) + " tensor)";
}

}  // namespace

matex_dtype_t reduction_dtype(at::ScalarType type, const char* collective) {
  matex_dtype_t dtype;
  TORCH_CHECK(native_dtype(type, &dtype), "matex: cannot reduce dtype ", c10::toString(type), where(collective, type),
              "; reductions take bool, integer, float16, bfloat16, float32 and float64 tensors");
  return dtype;
}

Movement movement_of(at::ScalarType type) {
  matex_dtype_t dtype;
  if (native_dtype(type, &dtype)) return {dtype, 1};
  return {MATEX_UINT8, c10::elementSize(type)};
}

Reduction reduction_of(const c10d::ReduceOp& op, at::ScalarType type, const char* collective) {
  const matex_dtype_t dtype = reduction_dtype(type, collective);
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: r.op = MATEX_SUM; break;
    case c10d::ReduceOp::PRODUCT: r.op = MATEX_PROD; break;
    case c10d::ReduceOp::MIN: r.op = MATEX_MIN; break;
    case c10d::ReduceOp::MAX: r.op = MATEX_MAX; break;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(is_floating(dtype), "matex: ReduceOp.AVG needs a floating dtype", where(collective, type),
                  "; use SUM and divide");
      r.op = MATEX_AVG;
      break;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(!is_floating(dtype), "matex: bitwise ReduceOps need a bool or integer dtype", where(collective, type));
      r.op = op.op_ == c10d::ReduceOp::BAND ? MATEX_BAND : op.op_ == c10d::ReduceOp::BOR ? MATEX_BOR : MATEX_BXOR;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(is_floating(dtype), "matex: ReduceOp.PREMUL_SUM needs a floating dtype", where(collective, type));
      auto* supplement = dynamic_cast<compat::PreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement != nullptr, "matex: ReduceOp.PREMUL_SUM came without its factor", where(collective, type));
      r.premultiplied = true;
      r.factor = supplement->tensor_factor.defined() ? supplement->tensor_factor.item<double>()
                                                     : supplement->double_factor;
      break;
    }
    default:
      TORCH_CHECK(false, "matex: ReduceOp ", static_cast<int>(op.op_), " is not supported", where(collective, type));
  }
  return r;
}

}  // namespace matex_torch
