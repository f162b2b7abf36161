#include "core/dtype.h"

#include "core/error.h"

namespace matexcomm {

bool dtype_valid(matex_dtype_t dtype) {
  return static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < MATEX_DTYPE_COUNT;
}

bool op_valid(matex_op_t op) { return static_cast<int>(op) >= 0 && static_cast<int>(op) < MATEX_OP_COUNT; }

bool dtype_is_floating(matex_dtype_t dtype) {
  return dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 || dtype == MATEX_FLOAT32 ||
         dtype == MATEX_FLOAT64;
}

bool op_is_bitwise(matex_op_t op) { return op == MATEX_BAND || op == MATEX_BOR || op == MATEX_BXOR; }

size_t dtype_size(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT8: case MATEX_UINT8: case MATEX_BOOL: return 1;
    case MATEX_INT16: case MATEX_UINT16: case MATEX_FLOAT16: case MATEX_BFLOAT16: return 2;
    case MATEX_INT32: case MATEX_UINT32: case MATEX_FLOAT32: return 4;
    case MATEX_INT64: case MATEX_UINT64: case MATEX_FLOAT64: return 8;
    default: return 0;
  }
}

const char* dtype_name(matex_dtype_t dtype) {
  switch (dtype) {
    case MATEX_INT8: return "int8";
    case MATEX_UINT8: return "uint8";
    case MATEX_INT16: return "int16";
    case MATEX_UINT16: return "uint16";
    case MATEX_INT32: return "int32";
    case MATEX_UINT32: return "uint32";
    case MATEX_INT64: return "int64";
    case MATEX_UINT64: return "uint64";
    case MATEX_BOOL: return "bool";
    case MATEX_FLOAT16: return "float16";
    case MATEX_BFLOAT16: return "bfloat16";
    case MATEX_FLOAT32: return "float32";
    case MATEX_FLOAT64: return "float64";
    default: return "unknown";
  }
}

const char* op_name(matex_op_t op) {
  switch (op) {
    case MATEX_SUM: return "sum";
    case MATEX_PROD: return "prod";
    case MATEX_MIN: return "min";
    case MATEX_MAX: return "max";
    case MATEX_AVG: return "avg";
    case MATEX_BAND: return "band";
    case MATEX_BOR: return "bor";
    case MATEX_BXOR: return "bxor";
    default: return "unknown";
  }
}

std::string reduction_problem(matex_dtype_t dtype, matex_op_t op) {
  if (op == MATEX_AVG && !dtype_is_floating(dtype)) {
    return std::string("op = avg needs a floating dtype, but dtype = ") + dtype_name(dtype) +
           " (use sum and divide yourself)";
  }
  if (op_is_bitwise(op) && dtype_is_floating(dtype)) {
    return std::string("op = ") + op_name(op) + " needs an integer or bool dtype, but dtype = " + dtype_name(dtype);
  }
  return "";
}

void require_dtype(matex_dtype_t dtype, const char* argument) {
  if (!dtype_valid(dtype)) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, std::string(argument) + " = " + std::to_string(static_cast<int>(dtype)) +
                                           " is not a matex_dtype_t (valid: 0.." +
                                           std::to_string(MATEX_DTYPE_COUNT - 1) + ")");
  }
}

void require_reduction(matex_dtype_t dtype, matex_op_t op) {
  require_dtype(dtype, "dtype");
  if (!op_valid(op)) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "op = " + std::to_string(static_cast<int>(op)) +
                                           " is not a matex_op_t (valid: 0.." + std::to_string(MATEX_OP_COUNT - 1) +
                                           ")");
  }
  const std::string problem = reduction_problem(dtype, op);
  if (!problem.empty()) MATEX_RAISE(MATEX_ERR_INVALID_ARG, problem);
}

}  // namespace matexcomm
