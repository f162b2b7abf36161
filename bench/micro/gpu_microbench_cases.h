// gpu_microbench_cases.h - the measurements of matex-gpu-microbench on one
// GPU: device-to-device copies, batched pack/unpack (launch_batched_copy),
// pinned D2H/H2D copies and the HostStagingPipeline. Each time is the median
// of kTimedRepetitions repetitions after kWarmupRepetitions, measured with
// CUDA events on the stream the work is ordered on. Each measurement also
// copies its result back and counts the bytes that differ from the source.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/cuda_resources.h"
#include "gpu_tensor_mix.h"

namespace matexbench {

constexpr int kWarmupRepetitions = 2;
constexpr int kTimedRepetitions = 11;  // >= 10, odd: the median is one of the times

// The library's staging defaults. Keep them equal to the defaults of
// MATEX_CUDA_STAGING_CHUNK_BYTES (4M) and MATEX_CUDA_STAGING_SLOTS (2).
constexpr size_t kDefaultStagingChunkBytes = size_t{4} << 20;
constexpr int kDefaultStagingSlots = 2;

struct CopyTiming {
  double seconds = 0;
  uint64_t wrong = 0;
};

struct PackTiming {
  double pack_seconds = 0;    // one launch_batched_copy of every tensor into the fusion buffer
  double unpack_seconds = 0;  // and back out into the tensors' own memory
  uint64_t wrong = 0;
};

struct HostCopyTiming {
  double d2h_seconds = 0;
  double h2d_seconds = 0;
  double both_seconds = 0;  // D2H and H2D of the size each, at once on two streams
  uint64_t wrong = 0;
};

enum class StagingStep { kNothing, kMpiAllreduceSelf };

struct StagingTiming {
  size_t chunk_bytes = 0;
  int slots = 0;
  StagingStep step = StagingStep::kNothing;
  double seconds = 0;
  uint64_t wrong = 0;  // after the timed runs, and after one run whose step changes every byte
};

// Every buffer for sizes up to `max_bytes`, allocated once, and the source
// bytes (a fixed pseudo-random pattern, on the host and on the device).
// Uses the current device.
class GpuWorkspace {
 public:
  explicit GpuWorkspace(size_t max_bytes);

  CopyTiming device_to_device(size_t bytes);
  PackTiming pack_unpack(const TensorMix& mix);
  HostCopyTiming host_copies(size_t bytes);
  StagingTiming staging(size_t bytes, size_t chunk_bytes, int slots, StagingStep step);

 private:
  // Copies device[0, bytes) into readback_ (complete on return).
  const unsigned char* read_back(const void* device, size_t bytes);
  void poison(void* device, size_t bytes);

  size_t max_bytes_;
  size_t mix_capacity_;
  matexcomm::gpu::CudaStream stream_;
  matexcomm::gpu::CudaStream second_stream_;
  matexcomm::gpu::CudaEvent fork_;
  matexcomm::gpu::CudaEvent join_;
  matexcomm::gpu::PinnedBuffer reference_;  // the source bytes
  matexcomm::gpu::PinnedBuffer readback_;
  matexcomm::gpu::DeviceBuffer source_;     // reference_ on the device
  matexcomm::gpu::DeviceBuffer target_;
  matexcomm::gpu::DeviceBuffer tensors_in_;
  matexcomm::gpu::DeviceBuffer fusion_;
  matexcomm::gpu::DeviceBuffer tensors_out_;
};

}  // namespace matexbench
