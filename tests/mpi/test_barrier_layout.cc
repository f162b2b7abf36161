// test_barrier_layout.cc - matex_barrier and the layout queries.
//
// Barrier: before each barrier every rank (at staggered moments) creates a
// marker file in a shared directory; after the barrier every rank must see
// the markers of all ranks. No timing is asserted.
// Layout: rank/size/local rank/node queries must match MATEX_VIRTUAL_NODES
// (consecutive ranks per node), or, when it is unset, the ranks' host names as
// MPI reports them (nodes numbered in the order of their lowest rank): one node
// on one machine, one per host on the cluster testbed (tests/cluster).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"
#include "mpi_test_util.h"

namespace matex_test {
namespace {

std::string marker_path(const std::string& dir, int round, int rank) {
  return dir + "/round" + std::to_string(round) + ".rank" + std::to_string(rank);
}

TEST(Barrier, EveryRankArrivesBeforeAnyLeaves) {
  matex_comm_t comm = test_comm();
  const int rank = world_rank();
  const int size = world_size();
  char dir[256] = {};
  if (rank == 0) {
    std::snprintf(dir, sizeof dir, "/tmp/matex-barrier-XXXXXX");
    if (mkdtemp(dir) == nullptr) dir[0] = '\0';
  }
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  ASSERT_NE(dir[0], '\0') << "mkdtemp failed on rank 0";  // same outcome on every rank

  long long errors = 0;
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    usleep(static_cast<useconds_t>(((rank * 7 + round * 3) % 5) * 10000));  // stagger arrivals
    FILE* marker = std::fopen(marker_path(dir, round, rank).c_str(), "w");
    EXPECT_NE(marker, nullptr);
    if (marker != nullptr) std::fclose(marker);
    const matex_status_t status = matex_barrier(comm);
    EXPECT_EQ(status, MATEX_SUCCESS) << matex_last_error();
    errors += status != MATEX_SUCCESS;
    for (int r = 0; r < size; ++r) {
      const bool present = access(marker_path(dir, round, r).c_str(), F_OK) == 0;
      EXPECT_TRUE(present) << "round " << round << ": rank " << rank << " left the barrier before rank " << r
                           << " arrived";
      errors += !present;
    }
  }
  for (int i = 0; i < 200; ++i) {
    const matex_status_t status = matex_barrier(comm);
    errors += status != MATEX_SUCCESS;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    for (int round = 0; round < kRounds; ++round) {
      for (int r = 0; r < size; ++r) std::remove(marker_path(dir, round, r).c_str());
    }
    rmdir(dir);
  }
  agree_no_errors(errors, "barrier");
}

TEST(Layout, QueriesMatchVirtualNodes) {
  matex_comm_t comm = test_comm();
  const int rank = world_rank();
  const int size = world_size();
  int got_rank = -1, got_size = -1, local_rank = -1, local_size = -1, node = -1, nodes = -1;
  EXPECT_EQ(matex_comm_rank(comm, &got_rank), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_size(comm, &got_size), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_local_rank(comm, &local_rank), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_local_size(comm, &local_size), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_node_index(comm, &node), MATEX_SUCCESS);
  EXPECT_EQ(matex_comm_node_count(comm, &nodes), MATEX_SUCCESS);

  int expected_node = 0, expected_local_rank = 0, expected_local_size = 0, expected_nodes = 0;
  const std::vector<int> sizes = virtual_node_sizes();
  if (!sizes.empty()) {
    int first_of_node = 0;
    while (rank >= first_of_node + sizes[expected_node]) first_of_node += sizes[expected_node++];
    expected_local_rank = rank - first_of_node;
    expected_local_size = sizes[expected_node];
    expected_nodes = static_cast<int>(sizes.size());
  } else {
    // The reference from MPI alone: every rank's processor name.
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    std::vector<char> names(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    const auto name_of = [&](int r) {
      return std::string(&names[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    };
    std::vector<std::string> hosts;  // in the order of their lowest rank
    for (int r = 0; r < size; ++r) {
      const std::string host = name_of(r);
      int index = 0;
      while (index < static_cast<int>(hosts.size()) && hosts[index] != host) ++index;
      if (index == static_cast<int>(hosts.size())) hosts.push_back(host);
      if (host == name_of(rank)) {
        if (r < rank) ++expected_local_rank;
        ++expected_local_size;
        expected_node = index;
      }
    }
    expected_nodes = static_cast<int>(hosts.size());
  }

  long long errors = 0;
  const auto expect = [&](const char* what, int got, int want) {
    EXPECT_EQ(got, want) << what << " on rank " << rank;
    errors += got != want;
  };
  expect("matex_comm_rank", got_rank, rank);
  expect("matex_comm_size", got_size, size);
  expect("matex_comm_node_count", nodes, expected_nodes);
  expect("matex_comm_node_index", node, expected_node);
  expect("matex_comm_local_size", local_size, expected_local_size);
  expect("matex_comm_local_rank", local_rank, expected_local_rank);
  agree_no_errors(errors, "layout queries");
}

}  // namespace
}  // namespace matex_test
