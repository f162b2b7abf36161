// cuda_check.h - turns CUDA runtime and NCCL failures into matexcomm::Error
// (MATEX_ERR_DEVICE) with the failing call and the library's own message.
#pragma once

#include <cuda_runtime.h>

namespace matexcomm::gpu {

// Throws Error(MATEX_ERR_DEVICE) "<what>: <cudaGetErrorString>" when rc != cudaSuccess.
void check_cuda(cudaError_t rc, const char* what);

}  // namespace matexcomm::gpu
