// gpu_collectives_main.cc - MPI + GoogleTest main of the multi-rank GPU tests.
// Each rank uses GPU local_rank % device_count (virtual nodes share one GPU).
// Without a usable GPU every rank prints the skip line ctest looks for.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "gpu/device_pointer.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  std::string why;
  const int devices = matexcomm::gpu::usable_device_count(&why);
  int have = devices > 0 ? 1 : 0;
  int everyone = 0;
  MPI_Allreduce(&have, &everyone, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (everyone == 0) {
    std::printf("SKIPPED: no GPU (%s)\n", have ? "another rank has none" : why.c_str());
    MPI_Finalize();
    return 0;
  }
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  cudaSetDevice(local_rank % devices);
  ::testing::InitGoogleTest(&argc, argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (world_rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
