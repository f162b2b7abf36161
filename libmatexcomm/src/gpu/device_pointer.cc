#include "gpu/device_pointer.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>

#include "gpu/cuda_check.h"

namespace matexcomm::gpu {

namespace {

// Asked once: without a device every cudaPointerGetAttributes would fail anyway.
bool process_has_device() {
  static const bool has = usable_device_count() > 0;
  return has;
}

using PrimaryContextState = CUresult (*)(CUdevice, unsigned int*, int*);
using CurrentContext = CUresult (*)(CUcontext*);

template <class Function>
Function driver_function(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Function>(function);
}

// Device memory needs a CUDA context. While none exists (a CPU-only job on a
// GPU machine, or calls before the program touched its GPU) every pointer is
// host memory, and asking the runtime about it would create a context on GPU
// 0 in every rank. The driver's own functions look without creating one.
bool some_context_exists() {
  static std::atomic<bool> seen{false};
  if (seen.load(std::memory_order_relaxed)) return true;
  static const PrimaryContextState primary_state = driver_function<PrimaryContextState>("cuDevicePrimaryCtxGetState");
  static const CurrentContext current = driver_function<CurrentContext>("cuCtxGetCurrent");
  if (primary_state == nullptr || current == nullptr) return true;  // cannot tell: let the runtime answer
  CUcontext context = nullptr;
  bool exists = current(&context) == CUDA_SUCCESS && context != nullptr;
  const int devices = usable_device_count();
  for (int d = 0; d < devices && !exists; ++d) {
    unsigned int flags = 0;
    int active = 0;
    exists = primary_state(static_cast<CUdevice>(d), &flags, &active) == CUDA_SUCCESS && active != 0;
  }
  if (exists) seen.store(true, std::memory_order_relaxed);  // contexts, once made, are kept
  return exists;
}

}  // namespace

void probe_devices() {
  if (process_has_device()) (void)some_context_exists();
}

MemoryKind memory_kind(const void* pointer) {
  if (pointer == nullptr || !process_has_device() || !some_context_exists()) return MemoryKind::kHost;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();
    return MemoryKind::kHost;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged ? MemoryKind::kDevice
                                                                                                : MemoryKind::kHost;
}

int device_of(const void* pointer) {
  if (pointer == nullptr || !process_has_device() || !some_context_exists()) return -1;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged ? attributes.device : -1;
}

void select_device_of(const void* pointer) {
  const int device = device_of(pointer);
  if (device < 0) return;
  int current = -1;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device) check_cuda(cudaSetDevice(device), "cudaSetDevice to the GPU of the buffers");
}

int usable_device_count(std::string* why_none) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)cudaGetLastError();
    if (why_none != nullptr) *why_none = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    return 0;
  }
  if (count == 0 && why_none != nullptr) *why_none = "cudaGetDeviceCount found no device";
  return count;
}

}  // namespace matexcomm::gpu
