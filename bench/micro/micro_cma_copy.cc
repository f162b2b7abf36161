// micro_cma_copy.cc - Google Benchmark of cross-memory attach
// (transport/cma_copy.h): cma_read and cma_write against this very process
// (getpid()), 4 KiB .. 64 MiB: the kernel's single-copy path without a peer.
// Skipped with a message where the kernel or a seccomp filter forbids it.
// Bytes processed = bytes copied.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>

#include "aligned_buffer.h"
#include "transport/cma_copy.h"

namespace matexbench {
namespace {

void cma_copy_benchmark(benchmark::State& state, bool read) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  AlignedBuffer remote(bytes);
  AlignedBuffer local(bytes);
  std::memset(remote.data(), 3, bytes);
  const pid_t self = ::getpid();
  if (!matexcomm::cma_probe(self, remote.data(), remote.data(), bytes < 64 ? bytes : 64)) {
    state.SkipWithError("process_vm_readv is not permitted here");
    return;
  }
  for (auto _ : state) {
    if (read) matexcomm::cma_read(self, remote.data(), local.data(), bytes);
    else matexcomm::cma_write(self, remote.data(), local.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

BENCHMARK_CAPTURE(cma_copy_benchmark, cma_read_self, true)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);
BENCHMARK_CAPTURE(cma_copy_benchmark, cma_write_self, false)->RangeMultiplier(4)->Range(4 << 10, 64 << 20);

}  // namespace
}  // namespace matexbench
