// test_bad_input.cc - invalid arguments to the collectives and to the
// algorithm choice, NULL and finalized communicators, and ranks that disagree
// on a collective's arguments. Each call must return the documented status,
// matex_last_error() must name the argument at fault, nothing may crash or
// hang, and the communicator must still work afterwards.
//
// Every rank passes the same bad argument, so every rank fails the same local
// check and no rank is left waiting in a collective.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "matexcomm/matexcomm_mpi.h"
#include "error_checks.h"
#include "mpi_test_util.h"

namespace matex_test {
namespace {

const matex_dtype_t kBadDtype = static_cast<matex_dtype_t>(99);
const matex_op_t kBadOp = static_cast<matex_op_t>(99);


TEST(BadInput, AllreduceArguments) {
  matex_comm_t comm = test_comm();
  float buf[8] = {};
  long long errors = 0;
  errors += expect_error(matex_allreduce(comm, nullptr, buf, 4, MATEX_FLOAT32, MATEX_SUM), MATEX_ERR_INVALID_ARG,
                         "sendbuf", "allreduce(sendbuf=NULL)");
  errors += expect_error(matex_allreduce(comm, buf, nullptr, 4, MATEX_FLOAT32, MATEX_SUM), MATEX_ERR_INVALID_ARG,
                         "recvbuf", "allreduce(recvbuf=NULL)");
  errors += expect_error(matex_allreduce(comm, MATEX_IN_PLACE, nullptr, 4, MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_INVALID_ARG, "NULL", "allreduce(MATEX_IN_PLACE, recvbuf=NULL)");
  errors += expect_error(matex_allreduce(comm, buf, buf, 4, kBadDtype, MATEX_SUM), MATEX_ERR_INVALID_ARG, "dtype",
                         "allreduce(dtype=99)");
  errors += expect_error(matex_allreduce(comm, buf, buf, 4, MATEX_FLOAT32, kBadOp), MATEX_ERR_INVALID_ARG, "op",
                         "allreduce(op=99)");
  errors += expect_error(matex_allreduce(comm, buf, buf, 4, MATEX_FLOAT32, static_cast<matex_op_t>(-1)),
                         MATEX_ERR_INVALID_ARG, "op", "allreduce(op=-1)");
  errors += expect_error(matex_allreduce(comm, buf, buf, 4, MATEX_INT32, MATEX_AVG), MATEX_ERR_INVALID_ARG, "avg",
                         "allreduce(int32, avg)");
  // count 0 needs no buffers at all.
  EXPECT_EQ(matex_allreduce(comm, nullptr, nullptr, 0, MATEX_FLOAT32, MATEX_SUM), MATEX_SUCCESS) << matex_last_error();
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "allreduce bad arguments");
}

TEST(BadInput, BroadcastGatherScatterArguments) {
  matex_comm_t comm = test_comm();
  const int size = world_size();
  std::vector<float> buf(8 * size + 8, 0.0f);
  long long errors = 0;
  errors += expect_error(matex_broadcast(comm, buf.data(), 4, MATEX_FLOAT32, -1), MATEX_ERR_INVALID_ARG, "root",
                         "broadcast(root=-1)");
  errors += expect_error(matex_broadcast(comm, buf.data(), 4, MATEX_FLOAT32, size), MATEX_ERR_INVALID_ARG, "root",
                         "broadcast(root=size)");
  errors += expect_error(matex_broadcast(comm, nullptr, 4, MATEX_FLOAT32, 0), MATEX_ERR_INVALID_ARG, "buffer",
                         "broadcast(buffer=NULL)");
  errors += expect_error(matex_broadcast(comm, buf.data(), 4, kBadDtype, 0), MATEX_ERR_INVALID_ARG, "dtype",
                         "broadcast(dtype=99)");

  errors += expect_error(matex_allgather(comm, nullptr, buf.data(), 4, MATEX_FLOAT32), MATEX_ERR_INVALID_ARG,
                         "sendbuf", "allgather(sendbuf=NULL)");
  errors += expect_error(matex_allgather(comm, buf.data(), nullptr, 4, MATEX_FLOAT32), MATEX_ERR_INVALID_ARG,
                         "recvbuf", "allgather(recvbuf=NULL)");
  errors += expect_error(matex_allgather(comm, buf.data(), buf.data() + 8, 4, kBadDtype), MATEX_ERR_INVALID_ARG,
                         "dtype", "allgather(dtype=99)");
  std::vector<size_t> counts(size, 2);
  errors += expect_error(matex_allgatherv(comm, buf.data(), 2, buf.data() + 8, nullptr, nullptr, MATEX_FLOAT32),
                         MATEX_ERR_INVALID_ARG, "recvcounts", "allgatherv(recvcounts=NULL)");
  errors += expect_error(matex_allgatherv(comm, buf.data(), 3, buf.data() + 8, counts.data(), nullptr, MATEX_FLOAT32),
                         MATEX_ERR_INVALID_ARG, "sendcount", "allgatherv(sendcount != recvcounts[rank])");

  errors += expect_error(matex_reduce_scatter(comm, nullptr, buf.data(), 2, MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_INVALID_ARG, "sendbuf", "reduce_scatter(sendbuf=NULL)");
  errors += expect_error(matex_reduce_scatter(comm, buf.data(), nullptr, 2, MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_INVALID_ARG, "recvbuf", "reduce_scatter(recvbuf=NULL)");
  errors += expect_error(matex_reduce_scatter(comm, buf.data(), buf.data() + 8, 2, kBadDtype, MATEX_SUM),
                         MATEX_ERR_INVALID_ARG, "dtype", "reduce_scatter(dtype=99)");
  errors += expect_error(matex_reduce_scatter(comm, buf.data(), buf.data() + 8, 2, MATEX_FLOAT32, kBadOp),
                         MATEX_ERR_INVALID_ARG, "op", "reduce_scatter(op=99)");
  errors += expect_error(matex_reduce_scatter(comm, buf.data(), buf.data() + 8, 2, MATEX_UINT8, MATEX_AVG),
                         MATEX_ERR_INVALID_ARG, "avg", "reduce_scatter(uint8, avg)");
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "broadcast/allgather/reduce_scatter bad arguments");
}

TEST(BadInput, AlgorithmChoice) {
  matex_comm_t comm = test_comm();
  long long errors = 0;
  errors += expect_error(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "no_such_algo"), MATEX_ERR_INVALID_ARG,
                         "no_such_algo", "set_algorithm(allreduce, \"no_such_algo\")");
  errors += expect_error(matex_set_algorithm(comm, MATEX_COLL_BROADCAST, "rab"), MATEX_ERR_INVALID_ARG, "rab",
                         "set_algorithm(broadcast, \"rab\")");
  errors += expect_error(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, nullptr), MATEX_ERR_INVALID_ARG, "name",
                         "set_algorithm(name=NULL)");
  errors += expect_error(matex_set_algorithm(comm, static_cast<matex_collective_t>(42), "flat"),
                         MATEX_ERR_INVALID_ARG, "coll", "set_algorithm(coll=42)");
  errors += expect_error(matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, nullptr), MATEX_ERR_INVALID_ARG, "name",
                         "last_algorithm(name=NULL)");
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "algorithm choice");
}

TEST(BadInput, NullAndFinalizedComm) {
  float buf[4] = {};
  long long errors = 0;
  errors += expect_error(matex_allreduce(nullptr, buf, buf, 4, MATEX_FLOAT32, MATEX_SUM), MATEX_ERR_NOT_INITIALIZED,
                         "comm", "allreduce(comm=NULL)");
  errors += expect_error(matex_broadcast(nullptr, buf, 4, MATEX_FLOAT32, 0), MATEX_ERR_NOT_INITIALIZED, "comm",
                         "broadcast(comm=NULL)");
  errors += expect_error(matex_barrier(nullptr), MATEX_ERR_NOT_INITIALIZED, "comm", "barrier(comm=NULL)");
  int value = 0;
  errors += expect_error(matex_comm_rank(nullptr, &value), MATEX_ERR_NOT_INITIALIZED, "comm", "comm_rank(NULL)");

  matex_comm_t second = nullptr;
  const matex_status_t created = matex_init_mpi(MPI_COMM_WORLD, &second);
  EXPECT_EQ(created, MATEX_SUCCESS) << matex_last_error();
  if (created == MATEX_SUCCESS) {  // same outcome on every rank
    matex_comm_t stale = second;
    EXPECT_EQ(matex_finalize(&second), MATEX_SUCCESS) << matex_last_error();
    EXPECT_EQ(second, nullptr) << "matex_finalize must reset the handle";
    errors += expect_error(matex_allreduce(stale, buf, buf, 4, MATEX_FLOAT32, MATEX_SUM), MATEX_ERR_NOT_INITIALIZED,
                           "comm", "allreduce(finalized comm)");
    errors += expect_error(matex_barrier(stale), MATEX_ERR_NOT_INITIALIZED, "comm", "barrier(finalized comm)");
    errors += expect_error(matex_finalize(&stale), MATEX_ERR_NOT_INITIALIZED, "comm", "finalize(finalized comm)");
  } else {
    ++errors;
  }
  errors += check_comm_still_works(test_comm());
  agree_no_errors(errors, "NULL and finalized comm");
}

// matexcomm.h promises that a finalized handle is always rejected, so creating
// another communicator (which may reuse the freed memory) must not revive it.
// Only local queries go through the stale handle, so a failure cannot hang.
TEST(BadInput, FinalizedHandleStaysDeadAfterNewComm) {
  long long errors = 0;
  matex_comm_t first = nullptr;
  matex_comm_t second = nullptr;
  const matex_status_t created = matex_init_mpi(MPI_COMM_WORLD, &first);
  EXPECT_EQ(created, MATEX_SUCCESS) << matex_last_error();
  if (created == MATEX_SUCCESS) {  // same outcome on every rank
    matex_comm_t stale = first;
    EXPECT_EQ(matex_finalize(&first), MATEX_SUCCESS) << matex_last_error();
    EXPECT_EQ(matex_init_mpi(MPI_COMM_WORLD, &second), MATEX_SUCCESS) << matex_last_error();
    int rank = -1;
    errors += expect_error(matex_comm_rank(stale, &rank), MATEX_ERR_NOT_INITIALIZED, "comm",
                           stale == second ? "comm_rank(finalized handle, its address reused by a new comm)"
                                           : "comm_rank(finalized handle)");
    if (second != nullptr) {
      EXPECT_EQ(matex_finalize(&second), MATEX_SUCCESS) << matex_last_error();
    }
  } else {
    ++errors;
  }
  agree_no_errors(errors, "finalized handle after a new comm");
}

// Ranks of one node call rs_ar_ag allreduce with different arguments: every
// rank must get MATEX_ERR_MISMATCH instead of hanging, and recover.
TEST(BadInput, MismatchedArgumentsInsideANode) {
  matex_comm_t comm = test_comm();
  int local_rank = 0, local_size = 1, nodes = 1;
  matex_comm_local_rank(comm, &local_rank);
  matex_comm_node_count(comm, &nodes);
  int smallest_node = 0;
  matex_comm_local_size(comm, &local_size);
  MPI_Allreduce(&local_size, &smallest_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (smallest_node < 2) GTEST_SKIP() << "needs at least two ranks on every node";  // same on every rank

  long long errors = 0;
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "rs_ar_ag"), MATEX_SUCCESS) << matex_last_error();
  std::vector<float> buf(400, 1.0f);
  // Different counts on different local ranks (all within one pipeline chunk).
  const size_t count = 100 + 100 * static_cast<size_t>(local_rank);
  errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), count, MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_MISMATCH, "local rank", "allreduce with per-rank counts");
  errors += check_comm_still_works(comm);
  // Different ops on different local ranks.
  const matex_op_t op = local_rank % 2 == 0 ? MATEX_SUM : MATEX_MAX;
  errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), 100, MATEX_FLOAT32, op), MATEX_ERR_MISMATCH,
                         "local rank", "allreduce with per-rank ops");
  errors += check_comm_still_works(comm);
  const char* ran = "?";
  matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &ran);
  EXPECT_STREQ(ran, "rs_ar_ag");
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
  agree_no_errors(errors, "mismatched arguments");
}

// A tuning file that matches `comm` and in which MPI's allreduce is the
// fastest at 256 B and rs_ar_ag at 4 KiB and 64 KiB. Rank 0 writes it.
std::string write_flat_band_tuning_file(matex_comm_t comm) {
  const char* library = "";
  const char* host_kind = "";
  const char* layout = "";
  EXPECT_EQ(matex_tuning_identity(comm, &library, &host_kind, &layout), MATEX_SUCCESS) << matex_last_error();
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path = "/tmp/matex_flat_band_" + std::to_string(pid) + ".json";
  if (world_rank() == 0) {
    const std::string ranks = std::to_string(world_size());
    std::ofstream out(path);
    out << "{\"format\": \"matex-tuning\", \"version\": 1, \"library\": \"" << library << "\", \"host_kind\": \""
        << host_kind << "\", \"layout\": \"" << layout << "\", \"created\": \"test\", \"ranks\": " << ranks
        << ", \"node_sizes\": [" << ranks << "], \"cores_shared\": false, \"rounds\": 1, \"collectives\": "
        << "{\"allreduce\": {"
        << "\"flat\": {\"alpha_s\": 1e-7, \"beta_s_per_byte\": 1e-6, \"measured\": [[256, 1e-7], [4096, 1e-3], "
        << "[65536, 1e-2]]}, "
        << "\"rs_ar_ag\": {\"alpha_s\": 1e-6, \"beta_s_per_byte\": 1e-10, \"measured\": [[256, 1e-5], "
        << "[4096, 1e-6], [65536, 1e-5]]}}}}\n";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

// On one node, a rank whose count falls in a band where auto's table runs flat
// while its neighbours' counts fall in a shared-memory band: flat used to wait
// inside MPI's call check while the others waited in shared memory, a hang
// (the neighbours timed out after MATEX_TIMEOUT_SECONDS, the flat rank never
// returned). Flat now meets them in shared memory, so every rank gets
// MATEX_ERR_MISMATCH and the communicator recovers.
TEST(BadInput, CountsInFlatAndSharedMemoryBandsOnOneNode) {
  int nodes = 1, local_rank = 0;
  matex_comm_node_count(test_comm(), &nodes);
  matex_comm_local_rank(test_comm(), &local_rank);
  if (nodes != 1 || world_size() < 2) GTEST_SKIP() << "needs one node of several ranks";  // same on every rank
  const std::string path = write_flat_band_tuning_file(test_comm());
  ScopedEnv calibrate("MATEX_CALIBRATE", "file");
  ScopedEnv file("MATEX_TUNING_FILE", path.c_str());
  ScopedEnv no_trials("MATEX_ALLREDUCE_TRIALS", "0");
  matex_comm_t comm = nullptr;
  ASSERT_EQ(matex_init_mpi(MPI_COMM_WORLD, &comm), MATEX_SUCCESS) << matex_last_error();
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
  const char* small = "";
  const char* middle = "";
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 256, &small);
  matex_auto_algorithm(comm, MATEX_COLL_ALLREDUCE, 4096, &middle);
  if (std::string(middle) != "rs_ar_ag") {  // the same on every rank
    matex_finalize(&comm);
    GTEST_SKIP() << "no shared memory here: auto runs " << middle << " at 4 KiB";
  }
  EXPECT_STREQ(small, "flat") << "the file should make auto run flat at 256 B";

  long long errors = 0;
  std::vector<float> buf(1024, 1.0f);
  const bool flat = local_rank % 2 == 0;
  errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), flat ? 64 : 1024, MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_MISMATCH, "local rank", "256 B (flat) against 4 KiB (rs_ar_ag)");
  errors += check_comm_still_works(comm);
  // Both in the flat band: flat's own round in shared memory tells them apart.
  errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), flat ? 64 : 60, MATEX_FLOAT32, MATEX_SUM),
                         MATEX_ERR_MISMATCH, "local rank", "256 B against 240 B, both flat");
  errors += check_comm_still_works(comm);
  // And flat still sums: every rank at 256 B.
  std::vector<float> in(64), out(64, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 5 + world_rank());
  EXPECT_EQ(matex_allreduce(comm, in.data(), out.data(), in.size(), MATEX_FLOAT32, MATEX_SUM), MATEX_SUCCESS);
  const char* ran = "";
  matex_last_algorithm(comm, MATEX_COLL_ALLREDUCE, &ran);
  EXPECT_STREQ(ran, "flat");
  for (size_t i = 0; i < in.size(); ++i) {
    const int p = world_size();
    errors += out[i] != static_cast<float>(static_cast<int>(i % 5) * p + p * (p - 1) / 2);
  }
  agree_no_errors(errors, "counts in the flat and the shared-memory bands");
  EXPECT_EQ(matex_finalize(&comm), MATEX_SUCCESS);
}

// Nodes that disagree while the ranks of each node agree among themselves:
// the shared-memory channel cannot see it, the call check must (every rank
// gets MATEX_ERR_MISMATCH naming both calls, and the communicator recovers).
// Without it a different op is a silently wrong sum and a different count
// truncates inside MPI.
TEST(BadInput, MismatchedCallsAcrossNodes) {
  matex_comm_t comm = test_comm();
  int nodes = 1, node = 0;
  matex_comm_node_count(comm, &nodes);
  if (nodes < 2) GTEST_SKIP() << "needs at least two nodes";  // same on every rank
  int local_rank = 0;
  matex_comm_local_rank(comm, &local_rank);
  // Node index = number of distinct nodes among lower ranks; MATEX_VIRTUAL_NODES layouts are consecutive.
  const int rank = world_rank();
  std::vector<int> local_ranks(world_size());
  MPI_Allgather(&local_rank, 1, MPI_INT, local_ranks.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r <= rank; ++r) node += local_ranks[r] == 0;
  const bool first_node = node == 0;

  long long errors = 0;
  for (const char* algorithm : {"auto", "rs_ar_ag", "rab", "flat"}) {
    EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, algorithm), MATEX_SUCCESS) << matex_last_error();
    std::vector<float> buf(300, 1.0f);
    const std::string what = std::string("allreduce (") + algorithm + ") ";
    errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), 100, MATEX_FLOAT32,
                                           first_node ? MATEX_SUM : MATEX_MAX),
                           MATEX_ERR_MISMATCH, "op=max", (what + "with another op on node 0").c_str());
    errors += check_comm_still_works(comm);
    errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), first_node ? 100 : 300, MATEX_FLOAT32,
                                           MATEX_SUM),
                           MATEX_ERR_MISMATCH, "count=300", (what + "with another count on node 0").c_str());
    errors += check_comm_still_works(comm);
    // The same 400 bytes as another dtype: a carried check's message has the length alone, so its tag must tell.
    errors += expect_error(matex_allreduce(comm, buf.data(), buf.data(), 100, first_node ? MATEX_INT32 : MATEX_FLOAT32,
                                           MATEX_SUM),
                           MATEX_ERR_MISMATCH, "dtype=int32",
                           (what + "with another dtype of the same size on node 0").c_str());
    errors += check_comm_still_works(comm);
    // 400 B rides in the call check's messages under flat; 20,000 B does not.
    std::vector<float> big(5000, 1.0f);
    errors += expect_error(matex_allreduce(comm, big.data(), big.data(), first_node ? 100 : 5000, MATEX_FLOAT32,
                                           MATEX_SUM),
                           MATEX_ERR_MISMATCH, "count=5000", (what + "with a count 50 times larger elsewhere").c_str());
    errors += check_comm_still_works(comm);
  }
  EXPECT_EQ(matex_set_algorithm(comm, MATEX_COLL_ALLREDUCE, "auto"), MATEX_SUCCESS);
  // Another collective altogether.
  std::vector<int32_t> ints(4 * world_size(), 7);
  const matex_status_t other = first_node ? matex_broadcast(comm, ints.data(), 4, MATEX_INT32, 0)
                                          : matex_allgather(comm, ints.data(), ints.data() + 4, 4, MATEX_INT32);
  errors += expect_error(other, MATEX_ERR_MISMATCH, "broadcast count=4 dtype=int32 root=0",
                         "broadcast on node 0, allgather elsewhere");
  errors += check_comm_still_works(comm);
  // A skipped call: the other nodes' next call (a barrier) meets node 0's allreduce.
  if (first_node) {
    std::vector<float> one(1, 1.0f);
    errors += expect_error(matex_allreduce(comm, one.data(), one.data(), 1, MATEX_FLOAT32, MATEX_SUM),
                           MATEX_ERR_MISMATCH, "barrier", "allreduce that the other nodes skipped");
  } else {
    errors += expect_error(matex_barrier(comm), MATEX_ERR_MISMATCH, "allreduce count=1",
                           "barrier meeting an allreduce that this node skipped");
  }
  errors += check_comm_still_works(comm);
  agree_no_errors(errors, "mismatched calls across nodes");
}

}  // namespace
}  // namespace matex_test
