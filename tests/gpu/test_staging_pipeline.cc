// test_staging_pipeline.cc - the pinned staging pipeline on its own: every
// chunk reaches the host step once, at the right offset, and what the step
// writes comes back; the one-way directions (broadcast sender and receiver)
// move only what they promise. Sizes: 0, 1, around one chunk, many chunks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "gpu/host_staging_pipeline.h"

namespace {

using matexcomm::gpu::HostStagingPipeline;

constexpr size_t kChunk = 4096;
constexpr size_t kSizes[] = {0, 1, kChunk - 1, kChunk, kChunk + 1, 7 * kChunk + 5, 64 * kChunk + 3};

uint8_t pattern(size_t i) { return static_cast<uint8_t>((i * 131 + 7) % 251); }

class DeviceBytes {
 public:
  explicit DeviceBytes(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(&data_, n ? n : 1), cudaSuccess); }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  char* get() const { return static_cast<char*>(data_); }
  std::vector<uint8_t> read() const {
    std::vector<uint8_t> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), data_, n_, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  // cudaMemcpy from pageable memory may return before the copy has landed.
  void write(const std::vector<uint8_t>& in) {
    EXPECT_EQ(cudaMemcpy(data_, in.data(), n_, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }

 private:
  void* data_ = nullptr;
  size_t n_;
};

class StagingPipeline : public ::testing::TestWithParam<int> {};  // slots

TEST_P(StagingPipeline, EveryChunkOnceAndBack) {
  HostStagingPipeline pipeline(kChunk, GetParam());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (size_t n : kSizes) {
    std::vector<uint8_t> input(n);
    for (size_t i = 0; i < n; ++i) input[i] = pattern(i);
    DeviceBytes device(n);
    device.write(input);
    std::vector<int> seen(n, 0);
    size_t wrong_in = 0;
    pipeline.run(device.get(), n, stream, [&](char* host, size_t offset, size_t bytes) {
      EXPECT_LE(bytes, pipeline.chunk_bytes());
      for (size_t i = 0; i < bytes; ++i) {
        ++seen[offset + i];
        wrong_in += static_cast<uint8_t>(host[i]) != pattern(offset + i);
        host[i] = static_cast<char>(static_cast<uint8_t>(host[i]) + 1);
      }
    });
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(wrong_in, 0u) << n << " bytes: the step saw wrong input";
    size_t wrong_out = 0, not_once = 0;
    const std::vector<uint8_t> output = device.read();
    for (size_t i = 0; i < n; ++i) {
      wrong_out += output[i] != static_cast<uint8_t>(pattern(i) + 1);
      not_once += seen[i] != 1;
    }
    EXPECT_EQ(wrong_out, 0u) << n << " bytes";
    EXPECT_EQ(not_once, 0u) << n << " bytes";
  }
  cudaStreamDestroy(stream);
}

TEST_P(StagingPipeline, OneWayDirections) {
  HostStagingPipeline pipeline(kChunk, GetParam());
  const size_t n = 9 * kChunk + 17;
  std::vector<uint8_t> input(n);
  for (size_t i = 0; i < n; ++i) input[i] = pattern(i);
  DeviceBytes device(n);
  device.write(input);
  std::vector<uint8_t> gathered(n, 0);
  // Sender: reads every chunk, the device buffer stays as it was.
  pipeline.run(device.get(), n, nullptr,
               [&](char* host, size_t offset, size_t bytes) {
                 for (size_t i = 0; i < bytes; ++i) gathered[offset + i] = static_cast<uint8_t>(host[i]);
                 host[0] = 0;  // must not travel back
               },
               HostStagingPipeline::Directions{true, false});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(gathered, input);
  EXPECT_EQ(device.read(), input);
  // Receiver: writes every chunk without reading the device first.
  pipeline.run(device.get(), n, nullptr,
               [&](char* host, size_t offset, size_t bytes) {
                 for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<char>(pattern(offset + i) ^ 0x5a);
               },
               HostStagingPipeline::Directions{false, true});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint8_t> output = device.read();
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += output[i] != static_cast<uint8_t>(pattern(i) ^ 0x5a);
  EXPECT_EQ(wrong, 0u);
}

INSTANTIATE_TEST_SUITE_P(Slots, StagingPipeline, ::testing::Values(2, 3));

}  // namespace
