// allreduce_demo.cc - the demo run by scripts/demo.sh: float32 sum allreduce
// with every algorithm at a few sizes, each result checked against a closed
// form, with the time per call. (matex-bench, with nccl-tests tables, is the
// real benchmark.)
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.hpp"

namespace {

// Rank r contributes (i % 251) + r, so the sum is p*(i % 251) + p(p-1)/2: exact in float32.
float expected_sum(size_t i, int p) { return static_cast<float>(p * static_cast<int>(i % 251) + p * (p - 1) / 2); }

}  // namespace

int main() {
  try {
    matex::Communicator comm;
    const int rank = comm.rank();
    const int p = comm.size();
    if (rank == 0) {
      std::printf("%d ranks on %d nodes; float32 sum; each result checked\n", p, comm.node_count());
      std::printf("%-10s %-10s %12s %12s %12s %s\n", "requested", "used", "bytes", "time_us", "busbw_GB/s", "check");
    }
    int wrong_total = 0;
    for (const char* algorithm : {"auto", "flat", "rs_ar_ag", "rab"}) {
      comm.set_algorithm(MATEX_COLL_ALLREDUCE, algorithm);
      for (size_t count : {size_t{256}, size_t{262144}, size_t{4194304}}) {
        std::vector<float> send(count), recv(count);
        for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(i % 251 + rank);
        const int iterations = count > 1000000 ? 5 : 20;
        comm.barrier();
        double start = MPI_Wtime();
        for (int it = 0; it < iterations; ++it) comm.allreduce(send.data(), recv.data(), count, MATEX_FLOAT32, MATEX_SUM);
        double seconds = (MPI_Wtime() - start) / iterations;
        int wrong = 0;
        for (size_t i = 0; i < count; ++i) wrong += recv[i] != expected_sum(i, p);
        int wrong_all = 0;
        MPI_Allreduce(&wrong, &wrong_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        wrong_total += wrong_all;
        double bytes = static_cast<double>(count * sizeof(float));
        double busbw = p > 1 ? bytes / seconds * 2.0 * (p - 1) / p / 1e9 : 0.0;
        if (rank == 0) {
          std::printf("%-10s %-10s %12.0f %12.1f %12.2f %s\n", algorithm,
                      comm.last_algorithm(MATEX_COLL_ALLREDUCE).c_str(), bytes, seconds * 1e6, busbw,
                      wrong_all == 0 ? "ok" : "WRONG");
        }
      }
    }
    if (rank == 0) std::printf("%s\n", wrong_total == 0 ? "all results correct" : "SOME RESULTS WRONG");
    return wrong_total == 0 ? 0 : 1;
  } catch (const matex::Error& error) {
    std::fprintf(stderr, "matex-allreduce-demo: %s\n", error.what());
    return 2;
  }
}
