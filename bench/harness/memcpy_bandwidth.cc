// memcpy_bandwidth.cc - see memcpy_bandwidth.h.
#include "memcpy_bandwidth.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "aligned_buffer.h"
#include "barrier_asleep.h"

namespace matexbench {

double measure_memcpy_gbps(int repeats) {
  constexpr size_t kBytes = size_t{64} << 20;
  AlignedBuffer source(kBytes);
  AlignedBuffer target(kBytes);
  std::memset(source.data(), 1, kBytes);
  double best = 0.0;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(target.data(), source.data(), kBytes);
    asm volatile("" : : "r"(target.data()) : "memory");  // the copy must happen
    std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    best = std::max(best, kBytes / seconds.count() / 1e9);
  }
  return best;
}

double measure_memcpy_gbps_on_rank0() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double gbps = rank == 0 ? measure_memcpy_gbps() : 0.0;
  barrier_asleep();
  return gbps;
}

}  // namespace matexbench
