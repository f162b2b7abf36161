#include "gpu/host_staging_pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/cuda_check.h"

namespace matexcomm::gpu {

namespace {
constexpr size_t kPageBytes = 4096;
}

HostStagingPipeline::HostStagingPipeline(size_t chunk_bytes, int slots)
    : chunk_bytes_((std::max<size_t>(chunk_bytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes) {
  MATEX_REQUIRE(slots >= 2, MATEX_ERR_INVALID_ARG, "staging pipeline: slots = " + std::to_string(slots) + " < 2");
  for (int s = 0; s < slots; ++s) {
    slots_.emplace_back(chunk_bytes_);
    fetched_.emplace_back();
    returned_.emplace_back();
  }
}

HostStagingPipeline::~HostStagingPipeline() {
  (void)cudaStreamSynchronize(copy_out_.get());
  (void)cudaStreamSynchronize(copy_in_.get());
}

void HostStagingPipeline::run(void* device, size_t bytes, cudaStream_t stream, const HostStep& step,
                              Directions directions) {
  if (bytes == 0) return;
  char* base = static_cast<char*>(device);
  const size_t chunks = (bytes + chunk_bytes_ - 1) / chunk_bytes_;
  const size_t slots = slots_.size();
  auto chunk_size = [&](size_t k) { return std::min(chunk_bytes_, bytes - k * chunk_bytes_); };
  // Both copy streams start after the work already queued on the caller's stream.
  start_.record(stream);
  start_.make_wait(copy_out_.get());
  start_.make_wait(copy_in_.get());
  // The slots were last read by the previous run's H2D copies, maybe ordered
  // after another caller stream: the first fetches wait for them too.
  drained_.make_wait(copy_out_.get());
  // Slot k % s is reused by chunk k: its D2H waits for chunk k - s's H2D.
  auto fetch = [&](size_t k) {
    const size_t s = k % slots;
    if (k >= slots) returned_[s].make_wait(copy_out_.get());
    if (directions.to_host) {
      check_cuda(cudaMemcpyAsync(slots_[s].data(), base + k * chunk_bytes_, chunk_size(k), cudaMemcpyDeviceToHost,
                                 copy_out_.get()),
                 "staging: cudaMemcpyAsync device to host");
    }
    fetched_[s].record(copy_out_.get());
  };
  // A step that throws leaves copies queued: wait for them before the
  // exception leaves, so that none writes into the buffer afterwards.
  struct DrainOnException {
    const HostStagingPipeline& self;
    bool completed = false;
    ~DrainOnException() {
      if (completed) return;
      (void)cudaStreamSynchronize(self.copy_out_.get());
      (void)cudaStreamSynchronize(self.copy_in_.get());
    }
  } drain{*this};
  const size_t ahead = std::min(chunks, slots);
  for (size_t k = 0; k < ahead; ++k) fetch(k);
  for (size_t k = 0; k < chunks; ++k) {
    const size_t s = k % slots;
    // fetched_ also covers the slot's previous H2D copy, which the copy-out
    // stream waited for before recording it: the host may overwrite the slot.
    fetched_[s].host_wait("staging: waiting for a device-to-host copy");
    step(slots_[s].data(), k * chunk_bytes_, chunk_size(k));
    if (directions.to_device) {
      check_cuda(cudaMemcpyAsync(base + k * chunk_bytes_, slots_[s].data(), chunk_size(k), cudaMemcpyHostToDevice,
                                 copy_in_.get()),
                 "staging: cudaMemcpyAsync host to device");
    }
    returned_[s].record(copy_in_.get());
    if (k + slots < chunks) fetch(k + slots);
  }
  // Later work on the caller's stream waits for the last copies of both streams.
  drained_.record(copy_in_.get());
  drained_.make_wait(stream);
  finish_.record(copy_out_.get());
  finish_.make_wait(stream);
  drain.completed = true;
}

}  // namespace matexcomm::gpu
