#include "gpu/cuda_resources.h"

#include <sched.h>

#include "gpu/cuda_check.h"

namespace matexcomm::gpu {

CudaStream::CudaStream() { check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
CudaStream::~CudaStream() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}
CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}
void CudaStream::synchronize(const char* what) const { check_cuda(cudaStreamSynchronize(stream_), what); }

CudaEvent::CudaEvent() { check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate"); }
CudaEvent::~CudaEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
}
CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}
void CudaEvent::record(cudaStream_t stream) { check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord"); }
void CudaEvent::make_wait(cudaStream_t stream) const {
  check_cuda(cudaStreamWaitEvent(stream, event_, 0), "cudaStreamWaitEvent");
}
void CudaEvent::host_wait(const char* what) const {
  // Poll and yield rather than cudaEventSynchronize, whose default spin would
  // take the core from the other ranks of an oversubscribed node.
  for (int polls = 0;; ++polls) {
    cudaError_t rc = cudaEventQuery(event_);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) check_cuda(rc, what);
    if (polls > 64) sched_yield();
  }
}

void* DeviceAllocation::allocate(size_t bytes) {
  void* data = nullptr;
  check_cuda(cudaMalloc(&data, bytes), "cudaMalloc");
  return data;
}
void DeviceAllocation::release(void* data) noexcept { (void)cudaFree(data); }

void* PinnedAllocation::allocate(size_t bytes) {
  void* data = nullptr;
  check_cuda(cudaMallocHost(&data, bytes), "cudaMallocHost");
  return data;
}
void PinnedAllocation::release(void* data) noexcept { (void)cudaFreeHost(data); }

}  // namespace matexcomm::gpu
