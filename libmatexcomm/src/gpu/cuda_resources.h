// cuda_resources.h - RAII owners of CUDA streams, events, device memory and
// pinned host memory. Each releases its resource in the destructor (errors
// there are ignored: a destructor has no one to tell) and is move-only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace matexcomm::gpu {

// A non-blocking stream (does not synchronize with the legacy default stream).
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize(const char* what) const;

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing (cheapest to record and wait on).
class CudaEvent {
 public:
  CudaEvent();
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream);
  // Makes `stream` wait (on the device) for the last record.
  void make_wait(cudaStream_t stream) const;
  // Blocks the host until the last record completed, yielding while it waits.
  void host_wait(const char* what) const;

 private:
  cudaEvent_t event_ = nullptr;
};

// How CudaMemory gets and returns its bytes.
struct DeviceAllocation {  // cudaMalloc
  static void* allocate(size_t bytes);
  static void release(void* data) noexcept;
};
struct PinnedAllocation {  // cudaMallocHost: page-locked host memory, for copies that overlap
  static void* allocate(size_t bytes);
  static void release(void* data) noexcept;
};

// Memory that grows on demand (old contents are not kept) and never shrinks.
template <class Allocation>
class CudaMemory {
 public:
  CudaMemory() = default;
  explicit CudaMemory(size_t bytes) { reserve(bytes); }
  ~CudaMemory() { reset(); }
  CudaMemory(CudaMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  CudaMemory& operator=(CudaMemory&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;

  // At least `bytes`.
  char* reserve(size_t bytes) {
    if (data_ != nullptr && bytes <= bytes_) return data_;
    reset();
    data_ = static_cast<char*>(Allocation::allocate(bytes == 0 ? 1 : bytes));
    bytes_ = bytes;
    return data_;
  }
  char* data() const noexcept { return data_; }
  size_t size() const noexcept { return bytes_; }

 private:
  void reset() noexcept {
    if (data_ != nullptr) Allocation::release(data_);
    data_ = nullptr;
    bytes_ = 0;
  }

  char* data_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = CudaMemory<DeviceAllocation>;
using PinnedBuffer = CudaMemory<PinnedAllocation>;

}  // namespace matexcomm::gpu
