// test_failure_handling.cc - ranks that disagree, and peers that do not show
// up, must produce errors on every rank: never a hang, never a silently wrong
// result.
//   - one rank passes count 0 while its node neighbours pass 10;
//   - one rank's MATEX_* environment differs from, or is invalid unlike, the others';
//   - ranks choose different algorithms with matex_set_algorithm;
//   - a peer on the same node arrives after MATEX_TIMEOUT_SECONDS: the waiting
//     rank gets MATEX_ERR_TIMEOUT, the late one MATEX_ERR_COMM_FAILED, and the
//     communicator refuses further calls until it is finalized.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "error_checks.h"
#include "matexcomm/matexcomm_mpi.h"
#include "mpi_test_util.h"

namespace matex_test {
namespace {

int smallest_node_size(matex_comm_t comm) {
  int local_size = 1, smallest = 0;
  matex_comm_local_size(comm, &local_size);
  MPI_Allreduce(&local_size, &smallest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return smallest;
}

TEST(FailureHandling, ZeroCountOnOneRankIsAMismatch) {
  matex_comm_t comm = test_comm();
  if (smallest_node_size(comm) < 2) GTEST_SKIP() << "needs at least two ranks on every node";
  int local_rank = 0;
  matex_comm_local_rank(comm, &local_rank);
  long long errors = 0;
  for (const char* algorithm : {"rs_ar_ag", "rab"}) {
    EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, algorithm), MATEX_SUCCESS) << matex_last_error();
    std::vector<int32_t> buf(10, 1);
    const size_t count = local_rank == 0 ? 0 : buf.size();
    errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), count, MATEX_INT32, MATEX_SUM),
                           MATEX_ERR_MISMATCH, "count=", "allreduce with count 0 on local rank 0 only");
    errors += check_comm_still_works(comm);
  }
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
  agree_no_errors(errors, "count 0 on one rank");
}

TEST(FailureHandling, ConfigurationMustAgreeAcrossRanks) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  long long errors = 0;
  {
    ScopedEnv differing("MATEX_SHM_CHUNK_BYTES", world_rank() == 1 ? "1M" : "256K");
    matex_comm_t comm = nullptr;
    errors += expect_error(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_ERR_CONFIG, "MATEX_SHM_CHUNK_BYTES",
                           "init with MATEX_SHM_CHUNK_BYTES differing on rank 1");
    EXPECT_EQ(comm, nullptr);
  }
  {
    ScopedEnv invalid("MATEX_SHM_CHUNK_BYTES", world_rank() == 1 ? "lots" : nullptr);
    matex_comm_t comm = nullptr;
    const char* needle = world_rank() == 1 ? "MATEX_SHM_CHUNK_BYTES" : "rank 1";
    errors += expect_error(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_ERR_CONFIG, needle,
                           "init with an invalid MATEX_SHM_CHUNK_BYTES on rank 1");
    EXPECT_EQ(comm, nullptr);
  }
  {
    ScopedEnv out_of_range("MATEX_SHM_CHUNK_BYTES", "18446744073709551615");
    matex_comm_t comm = nullptr;
    errors += expect_error(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_ERR_CONFIG, "MATEX_SHM_CHUNK_BYTES",
                           "init with a huge MATEX_SHM_CHUNK_BYTES");
  }
  agree_no_errors(errors, "configuration agreement");
}

TEST(FailureHandling, AlgorithmChoiceMustAgree) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  matex_comm_t comm = test_comm();
  long long errors = 0;
  const char* mine = world_rank() == 0 ? "flat" : "rs_ar_ag";
  errors += expect_error(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, mine), MATEX_ERR_MISMATCH, "rank",
                         "set_algorithm with different names");
  const char* typo = world_rank() == 0 ? "rs_ar_agg" : "rs_ar_ag";
  errors += expect_error(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, typo), MATEX_ERR_INVALID_ARG,
                         world_rank() == 0 ? "rs_ar_agg" : "rank 0", "set_algorithm with a typo on rank 0");
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "algorithm agreement");
}

// From MATEX_CMA_MAX_BYTES on, auto picks the allreduce by placement, so the
// ranks of a node must agree on it: when they do not, every rank of the node
// is told, with a hint, and the communicator goes on working.
TEST(FailureHandling, PlacementMustAgreeWithinANodeForLargeAllreduces) {
  ScopedEnv small_cma_max("MATEX_CMA_MAX_BYTES", "256K");
  ScopedEnv fixed_sizes("MATEX_CALIBRATE", "off");  // a measured table might pick flat there
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  std::vector<float> buf(65536 * 2, 1.0f), out(buf.size());
  // Only where in-place calls do get the single-copy algorithm can placement differ.
  EXPECT_EQ(matex_allreduce(comm, MATEX_IN_PLACE, buf.data(), buf.size(), MATEX_FLOAT32, MATEX_SUM), MATEX_SUCCESS);
  const char* algorithm = "";
  matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &algorithm);
  int single_copy = std::string(algorithm) == "rs_ar_ag_cma", everywhere = 0;
  MPI_Allreduce(&single_copy, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!everywhere || smallest_node_size(comm) < 2) {
    EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS);
    GTEST_SKIP() << "needs cross-memory attach and two ranks on every node";
  }
  int local_rank = 0;
  matex_comm_local_rank(comm, &local_rank);
  const void* send = local_rank == 0 ? MATEX_IN_PLACE : buf.data();  // local rank 0 of every node in place
  long long errors = expect_error(matex_allreduce(comm, send, out.data(), buf.size(), MATEX_FLOAT32, MATEX_SUM),
                                  MATEX_ERR_MISMATCH, "in place", "large allreduce, in place on local rank 0 only");
  errors += check_comm_still_works(comm);
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS) << matex_last_error();
  agree_no_errors(errors, "placement differing inside a node");
}

TEST(FailureHandling, LatePeerTimesOutWithoutHanging) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "pairs ranks up";
  // Pairs of neighbouring ranks, each pair one node, 1 s timeout.
  MPI_Comm pair_mpi = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() / 2, world_rank(), &pair_mpi);
  matex_comm_t pair = nullptr;
  {
    ScopedEnv one_node("MATEX_VIRTUAL_NODES", nullptr);
    ScopedEnv short_timeout("MATEX_TIMEOUT_SECONDS", "1");
    ASSERT_EQ(matex_init_mpi(pair_mpi, &pair), MATEX_SUCCESS) << matex_last_error();
  }
  long long errors = 0;
  EXPECT_EQ(matex_set_algorithm(pair, MATEX_COLL_ALLREDUCE, "rs_ar_ag"), MATEX_SUCCESS) << matex_last_error();
  const bool late = world_rank() % 2 == 0;
  std::vector<float> buf(1000, 1.0f);
  if (late) usleep(5000 * 1000);  // 5 timeouts late: the waiting rank has given up long before, however busy
  const matex_status_t status = matex_allreduce(pair, buf.data(), buf.data(), buf.size(), MATEX_FLOAT32, MATEX_SUM);
  if (late) {
    errors += expect_error(status, MATEX_ERR_COMM_FAILED, "failed", "allreduce of the late rank");
  } else {
    errors += expect_error(status, MATEX_ERR_TIMEOUT, "world rank", "allreduce of the waiting rank");
  }
  errors += expect_error(matex_allreduce(pair, buf.data(), buf.data(), buf.size(), MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_COMM_FAILED, "finalize", "allreduce on a failed communicator");
  EXPECT_EQ(matex_finalize(&pair), MATEX_SUCCESS) << matex_last_error();
  MPI_Comm_free(&pair_mpi);
  agree_no_errors(errors, "late peer");
}

}  // namespace
}  // namespace matex_test
