// host_staging_pipeline.h - moves a device buffer through pinned host memory
// in chunks, so that an MPI that cannot read device memory can still work on
// it, with the copies overlapping the MPI calls.
//
// Steps, for chunk k of c bytes (s = slots, pinned buffers of c bytes each,
// allocated once):
//   1. D2H of chunk k into slot k % s, on the copy-out stream, once the H2D
//      of chunk k - s (the slot's previous user) has finished;
//   2. the host waits for that copy, then runs `step` on the slot (the MPI
//      call), while the copy-out stream already fetches chunks k+1 .. k+s-1;
//   3. H2D of the slot back to chunk k on the copy-in stream.
// The two streams run D2H and H2D at the same time (both copy engines).
// Cost: ~ max(n/B_d2h, n/B_h2d, sum of step times) + one chunk's D2H + H2D;
//   without overlap it would be their sum.
// Preconditions: the device buffer is not touched by others until the stream
//   passed to run() reaches the end of the pipeline (that is stream order).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "gpu/cuda_resources.h"

namespace matexcomm::gpu {

class HostStagingPipeline {
 public:
  // chunk_bytes is rounded up to 4 KiB; slots >= 2.
  HostStagingPipeline(size_t chunk_bytes, int slots);
  // Waits for copies still in flight (a run that ended in an exception).
  ~HostStagingPipeline();
  HostStagingPipeline(const HostStagingPipeline&) = delete;
  HostStagingPipeline& operator=(const HostStagingPipeline&) = delete;

  // Runs on the host for one chunk: `host` holds bytes [offset, offset+bytes)
  // of the device buffer (when to_host), and whatever it holds afterwards goes
  // back there (when to_device).
  using HostStep = std::function<void(char* host, size_t offset, size_t bytes)>;
  struct Directions {
    bool to_host = true;    // false: the step fills the slot itself (a broadcast receiver)
    bool to_device = true;  // false: the result stays on the host (a broadcast root)
  };

  // Runs the pipeline over device[0, bytes). It starts after the work already
  // on `stream`, and later work on `stream` starts after its last H2D copy.
  // Returns once the last step has run on the host (the H2D copies may still
  // be in flight: synchronize `stream` before the host reads the result).
  // When `step` throws, the copies already queued are waited for before the
  // exception leaves, so nothing writes into the buffer afterwards.
  void run(void* device, size_t bytes, cudaStream_t stream, const HostStep& step, Directions directions);
  void run(void* device, size_t bytes, cudaStream_t stream, const HostStep& step) {
    run(device, bytes, stream, step, Directions{});
  }

  size_t chunk_bytes() const { return chunk_bytes_; }

 private:
  size_t chunk_bytes_;
  std::vector<PinnedBuffer> slots_;
  std::vector<CudaEvent> fetched_;   // D2H of the slot's chunk done
  std::vector<CudaEvent> returned_;  // H2D of the slot's chunk done (slot free)
  CudaStream copy_out_;
  CudaStream copy_in_;
  CudaEvent start_;
  CudaEvent finish_;
  CudaEvent drained_;  // end of the last run's H2D copies: the next run's D2H into a slot waits for it
};

}  // namespace matexcomm::gpu
