// kill_target.cc - victim program of tests/scripts/kill_rank_test.sh.
//
//   matex-kill-target <dir> [max_seconds]
//
// Writes its pid to <dir>/pid.<rank>, then loops rs_ar_ag allreduces of
// 64 MiB of float32 (in place), touching <dir>/started.<rank> after the first
// one. The script SIGKILLs one rank mid-loop; the job must then end promptly
// and leave no shared-memory segment behind. Without a kill the loop stops
// after max_seconds (default 120) and the program exits with status 3, so a
// missed kill can never look like success.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "matexcomm/matexcomm_mpi.h"

namespace {

bool write_file(const std::string& path, const std::string& text) {
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return false;
  std::fputs(text.c_str(), file);
  return std::fclose(file) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <dir> [max_seconds]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::string dir = argv[1];
  const double max_seconds = argc > 2 ? std::atof(argv[2]) : 120.0;
  const std::string suffix = "." + std::to_string(rank);
  if (!write_file(dir + "/pid" + suffix, std::to_string(static_cast<long>(getpid())) + "\n")) {
    std::fprintf(stderr, "rank %d: cannot write %s/pid%s\n", rank, dir.c_str(), suffix.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  matex_comm_t comm = nullptr;
  if (matex_init_mpi(MPI_COMM_WORLD, &comm) != MATEX_SUCCESS ||
      matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "rs_ar_ag") != MATEX_SUCCESS) {
    std::fprintf(stderr, "rank %d: setup failed: %s\n", rank, matex_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  const size_t count = (64u << 20) / sizeof(float);
  std::vector<float> data(count, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  for (long iteration = 0;; ++iteration) {
    const matex_status_t status = matex_allreduce(comm, MATEX_IN_PLACE, data.data(), count, MATEX_FLOAT32, MATEX_AVG);
    if (status != MATEX_SUCCESS) {
      // Expected after a peer died (timeout or MPI error); exit without waiting for anyone.
      std::fprintf(stderr, "rank %d: allreduce %ld failed: %s: %s\n", rank, iteration, matex_status_string(status),
                   matex_last_error());
      std::fflush(stderr);
      _exit(1);
    }
    if (iteration == 0 && !write_file(dir + "/started" + suffix, "started\n")) {
      std::fprintf(stderr, "rank %d: cannot write the started marker\n", rank);
      _exit(2);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > max_seconds) {
      std::fprintf(stderr, "rank %d: nobody was killed within %.0f s\n", rank, max_seconds);
      matex_finalize(&comm);
      MPI_Finalize();
      return 3;
    }
  }
}
