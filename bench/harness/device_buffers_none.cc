// device_buffers_none.cc - device_buffers.h for builds without CUDA: there
// are no device buffers. parse_options already refuses --mem cuda in such a
// build; these answers only back that up.
#include <stdexcept>

#include "device_buffers.h"

namespace matexbench {

std::string select_rank_device() { return "--mem cuda: this build has no CUDA"; }

std::unique_ptr<DeviceBuffers> open_device_buffers(matex_comm_t, size_t) {
  throw std::runtime_error("--mem cuda: this build has no CUDA");
}

}  // namespace matexbench
