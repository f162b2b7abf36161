// dense_buffer.h - a tensor's elements as one dense block in host memory, as
// libmatexcomm's C API takes them: the tensor itself when it is contiguous,
// else a contiguous copy that write_back() copies into the tensor.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace matex_torch {

inline void require_host_tensor(const at::Tensor& tensor, const char* collective) {
  TORCH_CHECK(tensor.defined(), "matex: ", collective, " got an undefined tensor");
  TORCH_CHECK(tensor.device().is_cpu(), "matex: ", collective, " got a tensor on ", tensor.device().str(),
              "; the matex backend serves CPU tensors (init_process_group(\"cpu:matex,cuda:nccl\") sends CUDA "
              "tensors to NCCL)");
  TORCH_CHECK(tensor.layout() == at::kStrided, "matex: ", collective, " takes dense tensors, not ", tensor.layout());
}

class DenseBuffer {
 public:
  DenseBuffer(const at::Tensor& tensor, const char* collective) : original_(tensor) {
    require_host_tensor(tensor, collective);
    dense_ = tensor.is_contiguous() ? tensor : tensor.contiguous();
  }
  void* data() const { return dense_.data_ptr(); }
  size_t numel() const { return static_cast<size_t>(dense_.numel()); }
  const at::Tensor& dense() const { return dense_; }
  void write_back() const {
    if (!dense_.is_same(original_)) original_.copy_(dense_);
  }

 private:
  at::Tensor original_;
  at::Tensor dense_;
};

}  // namespace matex_torch
