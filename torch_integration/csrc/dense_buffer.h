// dense_buffer.h - a tensor's elements as one dense block, as libmatexcomm's
// C API takes them: the tensor itself when it is contiguous, else a
// contiguous copy that write_back() copies into the tensor. The block is in
// host memory, or in GPU memory for a CUDA tensor of a collective that
// libmatexcomm's device path serves (allreduce, broadcast, the allgathers and
// reduce-scatters) in a build with CUDA.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <matexcomm/matexcomm.h>

namespace matex_torch {

inline void require_host_tensor(const at::Tensor& tensor, const char* collective) {
  TORCH_CHECK(tensor.defined(), "matex: ", collective, " got an undefined tensor");
  TORCH_CHECK(tensor.device().is_cpu(), "matex: ", collective, " got a tensor on ", tensor.device().str(),
              "; the matex backend's ", collective, " takes CPU tensors only in this release "
              "(init_process_group(\"cpu:matex,cuda:nccl\") sends CUDA tensors to NCCL)");
  TORCH_CHECK(tensor.layout() == at::kStrided, "matex: ", collective, " takes dense tensors, not ", tensor.layout());
}

// A CPU tensor, or a CUDA tensor when libmatexcomm was built with CUDA; on
// `device` when one is given (every tensor of a call on the same device).
inline void require_usable_tensor(const at::Tensor& tensor, const char* collective,
                                  const c10::optional<c10::Device>& device = c10::nullopt) {
  TORCH_CHECK(tensor.defined(), "matex: ", collective, " got an undefined tensor");
  if (!tensor.device().is_cpu()) {
    TORCH_CHECK(tensor.device().is_cuda(), "matex: ", collective, " got a tensor on ", tensor.device().str(),
                "; the matex backend takes CPU and CUDA tensors");
    TORCH_CHECK(matex_built_with_cuda() == 1, "matex: ", collective, " got a CUDA tensor, but this libmatexcomm "
                "was built without CUDA (configure with MATEX_WITH_CUDA=ON), or send CUDA tensors to NCCL: "
                "init_process_group(\"cpu:matex,cuda:nccl\")");
  }
  TORCH_CHECK(!device || tensor.device() == *device, "matex: ", collective, " got tensors on ",
              device->str(), " and on ", tensor.device().str(), "; all of a call's tensors must be on one device");
  TORCH_CHECK(tensor.layout() == at::kStrided, "matex: ", collective, " takes dense tensors, not ", tensor.layout());
}

class DenseBuffer {
 public:
  // device_ok: the collective's device path takes GPU memory.
  DenseBuffer(const at::Tensor& tensor, const char* collective, bool device_ok = true) : original_(tensor) {
    if (device_ok) {
      require_usable_tensor(tensor, collective);
    } else {
      require_host_tensor(tensor, collective);
    }
    dense_ = tensor.is_contiguous() ? tensor : tensor.contiguous();
  }
  void* data() const { return dense_.data_ptr(); }
  size_t numel() const { return static_cast<size_t>(dense_.numel()); }
  const at::Tensor& dense() const { return dense_; }
  bool on_device() const { return dense_.is_cuda(); }
  void write_back() const {
    if (!dense_.is_same(original_)) original_.copy_(dense_);
  }

 private:
  at::Tensor original_;
  at::Tensor dense_;
};

}  // namespace matex_torch
