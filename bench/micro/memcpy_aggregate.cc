// memcpy_aggregate.cc - matex-memcpy-aggregate: the memory bandwidth that all
// ranks of a node reach when every one of them copies at once. It is the
// ceiling of a node's shared-memory allreduce: a reduce-scatter and an
// allgather through shared memory move about 3 bytes of memory traffic per
// byte of each rank's buffer (read the inputs, write and read the reduced
// pieces), where one memcpy moves 2 (read one, write one); so
//   busbw limit = (aggregate GB/s / p) x (2 / 3) x 2 (p - 1) / p.
//
// How: each rank fills its own two buffers (first touch: its own memory
// node), then in each of --repeats rounds every rank waits at a barrier and
// copies --bytes once; a round's time is its slowest rank's (MPI_MAX), and
// the best round gives p x bytes / time. A single rank's copy, alone while
// the others wait asleep in a barrier, is printed beside it.
// Output: one line, "MEMCPY_AGGREGATE ranks=P bytes=B total_GBps=X
// per_rank_GBps=Y single_GBps=Z", which bench/gpu/gpu_check.sh reads.
// Usage: mpirun -np P matex-memcpy-aggregate [--bytes N[K|M|G]] [--repeats R]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/config.h"

namespace {

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

Buffer touched(size_t bytes, int fill) {
  Buffer buffer(static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)));
  if (buffer) std::memset(buffer.get(), fill, bytes);
  return buffer;
}

// Seconds of one memcpy of `bytes`.
double timed_copy(char* to, const char* from, size_t bytes) {
  const double start = MPI_Wtime();
  std::memcpy(to, from, bytes);
  return MPI_Wtime() - start;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t bytes = size_t{256} << 20;
  int repeats = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--bytes" && i + 1 < argc) {
      if (!matexcomm::parse_bytes(argv[++i], &bytes)) bytes = 0;
    } else if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else {
      if (rank == 0) std::fprintf(stderr, "matex-memcpy-aggregate: unknown argument %s (--bytes N, --repeats R)\n", arg.c_str());
      MPI_Finalize();
      return 2;
    }
  }
  if (bytes == 0 || repeats < 1) {
    if (rank == 0) std::fprintf(stderr, "matex-memcpy-aggregate: --bytes must be > 0 and --repeats >= 1\n");
    MPI_Finalize();
    return 2;
  }
  Buffer from = touched(bytes, 1 + rank % 7);
  Buffer to = touched(bytes, 0);
  int ok = from && to ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (!ok) std::fprintf(stderr, "matex-memcpy-aggregate: rank %d cannot allocate 2 x %zu bytes\n", rank, bytes);
    MPI_Finalize();
    return 1;
  }
  double best_together = 1e300;
  for (int round = 0; round < repeats; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    double mine = timed_copy(to.get(), from.get(), bytes), slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best_together = std::min(best_together, slowest);
  }
  double best_alone = 1e300;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    for (int round = 0; round < repeats; ++round) best_alone = std::min(best_alone, timed_copy(to.get(), from.get(), bytes));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const double total = static_cast<double>(size) * static_cast<double>(bytes) / best_together / 1e9;
    std::printf("MEMCPY_AGGREGATE ranks=%d bytes=%zu total_GBps=%.2f per_rank_GBps=%.2f single_GBps=%.2f\n", size,
                bytes, total, total / size, static_cast<double>(bytes) / best_alone / 1e9);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
