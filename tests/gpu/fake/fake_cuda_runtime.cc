// fake_cuda_runtime.cc - the parts of the CUDA runtime libmatexcomm uses,
// implemented on the CPU, so that the GPU path's logic (device detection,
// algorithm choice, NCCL and staging steps, the engine's device fusion) runs in
// CI on a machine without a GPU, in every virtual-node layout.
//
// "Device memory" is host memory that cudaMalloc hands out and remembers, so
// cudaPointerGetAttributes can tell it apart. Every copy and kernel runs at
// once on the calling thread: streams and events are only tokens, so stream
// ORDER is not tested here (the real GPU tests do that). It says nothing
// about speed.
//
// MATEX_FAKE_GPU_SHARED=1 gives every rank the same PCI bus id (ranks of a
// node sharing one GPU, which NCCL refuses).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include <unistd.h>

namespace {

constexpr int kFakeDevices = 8;
constexpr size_t kAlignment = 256;

struct Allocations {
  std::mutex mutex;
  std::map<uintptr_t, size_t> device;  // start -> bytes
};
Allocations& allocations() {
  static Allocations all;
  return all;
}

thread_local int current_device = 0;

// A device allocation containing `pointer`, if any.
bool is_fake_device(const void* pointer) {
  Allocations& all = allocations();
  std::lock_guard<std::mutex> lock(all.mutex);
  const uintptr_t at = reinterpret_cast<uintptr_t>(pointer);
  auto next = all.device.upper_bound(at);
  if (next == all.device.begin()) return false;
  --next;
  return at < next->first + std::max<size_t>(next->second, 1);
}

CUresult primary_context_state(CUdevice, unsigned int* flags, int* active) {
  *flags = 0;
  *active = 1;
  return CUDA_SUCCESS;
}
CUresult current_context(CUcontext* context) {
  static int token;
  *context = reinterpret_cast<CUcontext>(&token);
  return CUDA_SUCCESS;
}

}  // namespace

cudaError_t cudaMalloc(void** pointer, size_t size) {
  const size_t rounded = (std::max<size_t>(size, 1) + kAlignment - 1) / kAlignment * kAlignment;
  *pointer = std::aligned_alloc(kAlignment, rounded);
  if (*pointer == nullptr) return cudaErrorMemoryAllocation;
  Allocations& all = allocations();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.device[reinterpret_cast<uintptr_t>(*pointer)] = size;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  {
    Allocations& all = allocations();
    std::lock_guard<std::mutex> lock(all.mutex);
    if (all.device.erase(reinterpret_cast<uintptr_t>(pointer)) == 0) return cudaErrorInvalidValue;
  }
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t size) {
  *pointer = std::malloc(std::max<size_t>(size, 1));
  return *pointer == nullptr ? cudaErrorMemoryAllocation : cudaSuccess;
}
cudaError_t cudaFreeHost(void* pointer) {
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind) {
  if (count > 0) std::memmove(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  *stream = reinterpret_cast<cudaStream_t>(new char);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<char*>(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  *event = reinterpret_cast<cudaEvent_t>(new char);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<char*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaGetDeviceCount(int* count) {
  const char* shared = std::getenv("MATEX_FAKE_GPU_SHARED");
  *count = shared != nullptr && std::string(shared) == "1" ? 1 : kFakeDevices;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  *device = current_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kFakeDevices) return cudaErrorInvalidDevice;
  current_device = device;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int length, int) {
  const char* shared = std::getenv("MATEX_FAKE_GPU_SHARED");
  const std::string id = shared != nullptr && std::string(shared) == "1" ? "fake:shared" : "fake:" + std::to_string(::getpid());
  std::snprintf(bus_id, static_cast<size_t>(length), "%s", id.c_str());
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t) { return "fake CUDA error"; }
const char* cudaGetErrorName(cudaError_t) { return "cudaErrorFake"; }

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes, const void* pointer) {
  *attributes = cudaPointerAttributes{};
  if (is_fake_device(pointer)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = current_device;
    attributes->devicePointer = const_cast<void*>(pointer);
  } else {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -1;
  }
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int, unsigned long long,
                                             enum cudaDriverEntryPointQueryResult* status) {
  *function = nullptr;
  if (std::strcmp(symbol, "cuDevicePrimaryCtxGetState") == 0) *function = reinterpret_cast<void*>(&primary_context_state);
  if (std::strcmp(symbol, "cuCtxGetCurrent") == 0) *function = reinterpret_cast<void*>(&current_context);
  if (status != nullptr) *status = *function != nullptr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
