#include "gpu/cuda_check.h"

#include <string>

#include "core/error.h"

namespace matexcomm::gpu {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
  MATEX_RAISE(MATEX_ERR_DEVICE, std::string(what) + " failed: " + cudaGetErrorName(rc) + " (" +
                                    cudaGetErrorString(rc) + ")");
}

}  // namespace matexcomm::gpu
