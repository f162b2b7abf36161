// gpu_microbench_cases.cc - see gpu_microbench_cases.h.
#include "gpu_microbench_cases.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/device_kernels.h"
#include "gpu/host_staging_pipeline.h"

namespace matexbench {
namespace {

using matexcomm::gpu::check_cuda;

constexpr int kPoison = 0xA5;
constexpr unsigned char kStepMask = 0x5A;  // the checking run's step XORs every byte with it

// A CUDA event that records time (CudaEvent of cuda_resources.h does not).
class TimingEvent {
 public:
  TimingEvent() { check_cuda(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~TimingEvent() { (void)cudaEventDestroy(event_); }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Median seconds from an event recorded on `stream` before `enqueue` to one
// recorded after it, over kTimedRepetitions after kWarmupRepetitions.
// `enqueue` queues its work on `stream` (or ends it there).
double median_seconds(cudaStream_t stream, const std::function<void()>& enqueue) {
  TimingEvent start;
  TimingEvent stop;
  std::vector<double> times;
  for (int rep = 0; rep < kWarmupRepetitions + kTimedRepetitions; ++rep) {
    check_cuda(cudaEventRecord(start.get(), stream), "cudaEventRecord");
    enqueue();
    check_cuda(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    if (rep >= kWarmupRepetitions) times.push_back(ms * 1e-3);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

uint64_t count_wrong(const unsigned char* got, const unsigned char* want, size_t bytes) {
  if (std::memcmp(got, want, bytes) == 0) return 0;
  uint64_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += got[i] != want[i];
  return wrong;
}

uint64_t count_wrong_masked(const unsigned char* got, const unsigned char* want, size_t bytes) {
  uint64_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += got[i] != static_cast<unsigned char>(want[i] ^ kStepMask);
  return wrong;
}

// splitmix64 of the word index: no period that a misplaced chunk could hide in.
void fill_reference(unsigned char* data, size_t bytes) {
  for (size_t word = 0; word * 8 < bytes; ++word) {
    uint64_t z = (word + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(data + word * 8, &z, std::min<size_t>(8, bytes - word * 8));
  }
}

}  // namespace

GpuWorkspace::GpuWorkspace(size_t max_bytes)
    : max_bytes_(max_bytes),
      mix_capacity_(tensor_mix_capacity(max_bytes, std::max<size_t>(64, resnet50_tensor_count()))),
      reference_(max_bytes), readback_(mix_capacity_), source_(max_bytes), target_(max_bytes),
      tensors_in_(mix_capacity_), fusion_(mix_capacity_), tensors_out_(mix_capacity_) {
  fill_reference(reinterpret_cast<unsigned char*>(reference_.data()), max_bytes_);
  check_cuda(cudaMemcpyAsync(source_.data(), reference_.data(), max_bytes_, cudaMemcpyHostToDevice, stream_.get()),
             "cudaMemcpyAsync H2D");
  stream_.synchronize("cudaStreamSynchronize");
}

const unsigned char* GpuWorkspace::read_back(const void* device, size_t bytes) {
  check_cuda(cudaMemcpyAsync(readback_.data(), device, bytes, cudaMemcpyDeviceToHost, stream_.get()),
             "cudaMemcpyAsync D2H");
  stream_.synchronize("cudaStreamSynchronize");
  return reinterpret_cast<const unsigned char*>(readback_.data());
}

void GpuWorkspace::poison(void* device, size_t bytes) {
  check_cuda(cudaMemsetAsync(device, kPoison, bytes, stream_.get()), "cudaMemsetAsync");
}

CopyTiming GpuWorkspace::device_to_device(size_t bytes) {
  const cudaStream_t stream = stream_.get();
  poison(target_.data(), bytes);
  CopyTiming timing;
  timing.seconds = median_seconds(stream, [&] {
    check_cuda(cudaMemcpyAsync(target_.data(), source_.data(), bytes, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync D2D");
  });
  const auto* reference = reinterpret_cast<const unsigned char*>(reference_.data());
  timing.wrong = count_wrong(read_back(target_.data(), bytes), reference, bytes);
  return timing;
}

PackTiming GpuWorkspace::pack_unpack(const TensorMix& mix) {
  const cudaStream_t stream = stream_.get();
  const size_t n = mix.bytes.size();
  const auto* reference = reinterpret_cast<const unsigned char*>(reference_.data());
  std::vector<matexcomm::gpu::CopyItem> pack(n);
  std::vector<matexcomm::gpu::CopyItem> unpack(n);
  for (size_t i = 0; i < n; ++i) {
    char* tensor_in = tensors_in_.data() + mix.tensor_offset[i];
    char* fused = fusion_.data() + mix.fusion_offset[i];
    check_cuda(cudaMemcpyAsync(tensor_in, source_.data() + mix.source_offset[i], mix.bytes[i],
                               cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync D2D");
    pack[i] = {tensor_in, fused, mix.bytes[i]};
    unpack[i] = {fused, tensors_out_.data() + mix.tensor_offset[i], mix.bytes[i]};
  }
  poison(fusion_.data(), mix.fusion_span);
  poison(tensors_out_.data(), mix.tensor_span);

  PackTiming timing;
  timing.pack_seconds = median_seconds(stream, [&] { matexcomm::gpu::launch_batched_copy(pack.data(), n, stream); });
  const unsigned char* fused = read_back(fusion_.data(), mix.fusion_span);
  for (size_t i = 0; i < n; ++i)
    timing.wrong += count_wrong(fused + mix.fusion_offset[i], reference + mix.source_offset[i], mix.bytes[i]);

  timing.unpack_seconds =
      median_seconds(stream, [&] { matexcomm::gpu::launch_batched_copy(unpack.data(), n, stream); });
  const unsigned char* tensors = read_back(tensors_out_.data(), mix.tensor_span);
  for (size_t i = 0; i < n; ++i)
    timing.wrong += count_wrong(tensors + mix.tensor_offset[i], reference + mix.source_offset[i], mix.bytes[i]);
  return timing;
}

HostCopyTiming GpuWorkspace::host_copies(size_t bytes) {
  const cudaStream_t stream = stream_.get();
  const cudaStream_t second = second_stream_.get();
  auto d2h = [&](cudaStream_t on) {
    check_cuda(cudaMemcpyAsync(readback_.data(), source_.data(), bytes, cudaMemcpyDeviceToHost, on),
               "cudaMemcpyAsync D2H");
  };
  auto h2d = [&](cudaStream_t on) {
    check_cuda(cudaMemcpyAsync(target_.data(), reference_.data(), bytes, cudaMemcpyHostToDevice, on),
               "cudaMemcpyAsync H2D");
  };
  HostCopyTiming timing;
  poison(target_.data(), bytes);
  timing.d2h_seconds = median_seconds(stream, [&] { d2h(stream); });
  const auto* reference = reinterpret_cast<const unsigned char*>(reference_.data());
  timing.wrong += count_wrong(reinterpret_cast<const unsigned char*>(readback_.data()), reference, bytes);
  timing.h2d_seconds = median_seconds(stream, [&] { h2d(stream); });
  timing.both_seconds = median_seconds(stream, [&] {
    fork_.record(stream);
    fork_.make_wait(second);
    d2h(stream);
    h2d(second);
    join_.record(second);
    join_.make_wait(stream);
  });
  timing.wrong += count_wrong(read_back(target_.data(), bytes), reference, bytes);
  return timing;
}

StagingTiming GpuWorkspace::staging(size_t bytes, size_t chunk_bytes, int slots, StagingStep step_kind) {
  const cudaStream_t stream = stream_.get();
  const auto* reference = reinterpret_cast<const unsigned char*>(reference_.data());
  matexcomm::gpu::HostStagingPipeline pipeline(chunk_bytes, slots);
  auto restore_target = [&] {
    check_cuda(cudaMemcpyAsync(target_.data(), source_.data(), bytes, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync D2D");
  };
  StagingTiming timing{chunk_bytes, slots, step_kind, 0.0, 0};

  // Checking run: a step that changes every byte shows each chunk made the round trip to its place.
  restore_target();
  pipeline.run(target_.data(), bytes, stream, [](char* host, size_t, size_t chunk) {
    for (size_t i = 0; i < chunk; ++i) host[i] = static_cast<char>(host[i] ^ kStepMask);
  });
  timing.wrong += count_wrong_masked(read_back(target_.data(), bytes), reference, bytes);

  const matexcomm::gpu::HostStagingPipeline::HostStep step =
      step_kind == StagingStep::kNothing
          ? matexcomm::gpu::HostStagingPipeline::HostStep([](char*, size_t, size_t) {})
          : matexcomm::gpu::HostStagingPipeline::HostStep([](char* host, size_t, size_t chunk) {
              // In place over MPI_COMM_SELF: the bytes stay; MPI's own per-call cost remains.
              MPI_Allreduce(MPI_IN_PLACE, host, static_cast<int>(std::min<size_t>(chunk, INT_MAX)), MPI_BYTE, MPI_BOR,
                            MPI_COMM_SELF);
            });
  restore_target();
  timing.seconds = median_seconds(stream, [&] { pipeline.run(target_.data(), bytes, stream, step); });
  timing.wrong += count_wrong(read_back(target_.data(), bytes), reference, bytes);
  return timing;
}

}  // namespace matexbench
