// micro_shm_copy.cc - Google Benchmark of the shared-memory copy path: memcpy
// from a private buffer into a ShmSegment (the copy-in of every shm
// algorithm) and back out (the copy-out), 4 KiB .. 64 MiB.
// Bytes processed = bytes copied.
#include <benchmark/benchmark.h>

#include <cstring>

#include "aligned_buffer.h"
#include "transport/shm_segment.h"

namespace matexbench {
namespace {

void shm_copy_benchmark(benchmark::State& state, bool into_segment) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  matexcomm::ShmSegment segment = matexcomm::ShmSegment::create(bytes, bytes);
  segment.unlink_name();  // nothing to leave behind even if the process dies
  std::memset(segment.data(), 1, bytes);
  AlignedBuffer local(bytes);
  std::memset(local.data(), 2, bytes);
  void* target = into_segment ? segment.data() : local.data();
  const void* source = into_segment ? local.data() : segment.data();
  for (auto _ : state) {
    std::memcpy(target, source, bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

BENCHMARK_CAPTURE(shm_copy_benchmark, memcpy_into_segment, true)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);
BENCHMARK_CAPTURE(shm_copy_benchmark, memcpy_out_of_segment, false)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);

}  // namespace
}  // namespace matexbench
