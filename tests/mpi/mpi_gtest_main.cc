// mpi_gtest_main.cc - GoogleTest main for tests launched by mpirun.
//
// MPI is initialized here (not by libmatexcomm), so finalizing matexcomm
// communicators inside tests never finalizes MPI. Rank 0 keeps the default
// result printer; the other ranks print only their failures, prefixed with
// their rank. After RUN_ALL_TESTS every rank learns which ranks failed and
// returns non-zero if any did, so mpirun and ctest see the failure.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "mpi_test_util.h"

namespace {

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.message());
    std::fflush(stderr);
  }
  void OnTestEnd(const testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
      std::fflush(stderr);
    }
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  testing::InitGoogleTest(&argc, argv);
  const int rank = matex_test::world_rank();
  const int size = matex_test::world_size();
  if (rank != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }

  const int result = RUN_ALL_TESTS();
  matex_test::release_test_comm();

  int failed = result != 0 ? 1 : 0;
  std::vector<int> failed_by_rank(size, 0);
  MPI_Allgather(&failed, 1, MPI_INT, failed_by_rank.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::string failed_ranks;
  for (int r = 0; r < size; ++r) {
    if (failed_by_rank[r]) failed_ranks += " " + std::to_string(r);
  }
  if (rank == 0) {
    if (failed_ranks.empty()) {
      std::printf("[mpi] all %d rank(s) passed\n", size);
    } else {
      std::printf("[mpi] FAILED on rank(s):%s\n", failed_ranks.c_str());
    }
    std::fflush(stdout);
  }
  MPI_Finalize();
  return failed_ranks.empty() ? 0 : 1;
}
