// tensor_conversion.h - TensorFlow dtypes and attribute strings in
// libmatexcomm's terms, and the error status every kernel reports.
#pragma once

#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/platform/status.h"

namespace matex_tf {

// False for a dtype libmatexcomm cannot reduce or move. Booleans only move
// (broadcast, allgather), as bytes.
inline bool to_matex_dtype(tensorflow::DataType dtype, matex_dtype_t* out) {
  switch (dtype) {
    case tensorflow::DT_BOOL: *out = MATEX_UINT8; return true;
    case tensorflow::DT_INT8: *out = MATEX_INT8; return true;
    case tensorflow::DT_UINT8: *out = MATEX_UINT8; return true;
    case tensorflow::DT_INT16: *out = MATEX_INT16; return true;
    case tensorflow::DT_UINT16: *out = MATEX_UINT16; return true;
    case tensorflow::DT_INT32: *out = MATEX_INT32; return true;
    case tensorflow::DT_INT64: *out = MATEX_INT64; return true;
    case tensorflow::DT_HALF: *out = MATEX_FLOAT16; return true;
    case tensorflow::DT_BFLOAT16: *out = MATEX_BFLOAT16; return true;
    case tensorflow::DT_FLOAT: *out = MATEX_FLOAT32; return true;
    case tensorflow::DT_DOUBLE: *out = MATEX_FLOAT64; return true;
    default: return false;
  }
}

// The dtype in libmatexcomm's terms in *out, or InvalidArgument naming the tensor and the dtype.
inline absl::Status dtype_of(tensorflow::DataType type, const std::string& name, matex_dtype_t* out) {
  if (to_matex_dtype(type, out)) return absl::OkStatus();
  return absl::InvalidArgumentError("matex: '" + name + "': dtype " + tensorflow::DataTypeString(type) +
                                    " is not supported");
}

inline absl::Status dtype_of(const tensorflow::Tensor& tensor, const std::string& name, matex_dtype_t* out) {
  return dtype_of(tensor.dtype(), name, out);
}

// InvalidArgument naming the tensor when an allreduce averages or scales a dtype that is not floating.
inline absl::Status check_scaling(matex_dtype_t dtype, matex_op_t op, double prescale, double postscale,
                                  const std::string& name) {
  const bool floating = dtype == MATEX_FLOAT16 || dtype == MATEX_BFLOAT16 || dtype == MATEX_FLOAT32 ||
                        dtype == MATEX_FLOAT64;
  if (floating || (op != MATEX_AVG && prescale == 1.0 && postscale == 1.0)) return absl::OkStatus();
  return absl::InvalidArgumentError("matex: '" + name + "': average and scale factors need a floating dtype");
}

// A tensor's dimensions, for matex_engine_submit_shaped: ranks must agree on
// them (allgather: past the first), so that tensors of one element count and
// different shapes fail on every rank, as Horovod's ops do.
struct Dims {
  explicit Dims(const tensorflow::TensorShape& shape) {
    for (int d = 0; d < shape.dims(); ++d) extents.push_back(shape.dim_size(d));
  }
  matex_shape_t shape() const { return matex_shape_t{extents.size(), extents.data()}; }
  std::vector<int64_t> extents;
};

// The reduce_op attribute ("sum", "average", "min", "max", "product").
inline bool to_matex_op(const std::string& name, matex_op_t* out) {
  if (name == "sum") *out = MATEX_SUM;
  else if (name == "average") *out = MATEX_AVG;
  else if (name == "min") *out = MATEX_MIN;
  else if (name == "max") *out = MATEX_MAX;
  else if (name == "product") *out = MATEX_PROD;
  else return false;
  return true;
}

// The name every rank matches the tensor by: the tensor_name attribute, or
// else the node's name (the same on every rank that built the same graph).
inline std::string tensor_name_of(const std::string& attribute, const std::string& node_name) {
  return attribute.empty() ? node_name : attribute;
}

// A failed collective as a TensorFlow error that names the tensor. Ranks that
// submitted a tensor differently (shape, dtype, operation, root) fail with
// FailedPrecondition, as Horovod's ops do; bad input on this rank with
// InvalidArgument.
inline absl::Status collective_error(matex_status_t status, const std::string& tensor, const char* message) {
  const std::string text = "matex: tensor '" + tensor + "': " + message;
  if (status == MATEX_ERR_MISMATCH) return absl::FailedPreconditionError(text);
  if (status == MATEX_ERR_INVALID_ARG) return absl::InvalidArgumentError(text);
  if (status == MATEX_ERR_TIMEOUT) return absl::DeadlineExceededError(text);
  if (status == MATEX_ERR_NOT_INITIALIZED) return absl::CancelledError(text);
  return absl::InternalError(text);
}

}  // namespace matex_tf
