// barrier_asleep.h - a barrier over MPI_COMM_WORLD whose waiters sleep in
// steps of 1 ms instead of spinning, so that ranks with nothing to do leave a
// shared core to the ones that measure (the preamble's yardsticks).
#pragma once

#include <mpi.h>

#include <chrono>
#include <thread>

namespace matexbench {

inline void barrier_asleep() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace matexbench
