// rank_latency.cc - see rank_latency.h.
#include "rank_latency.h"

#include <mpi.h>

#include <algorithm>

#include "barrier_asleep.h"

namespace matexbench {

namespace {

constexpr int kWarmUpTrips = 200;
constexpr int kBlocks = 3;
constexpr int kTripsPerBlock = 1000;

// `trips` round trips between ranks 0 and 1; returns the seconds they took.
double bounce(int rank, int trips) {
  char message[8] = {};
  const double start = MPI_Wtime();
  for (int i = 0; i < trips; ++i) {
    if (rank == 0) {
      MPI_Send(message, sizeof message, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(message, sizeof message, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(message, sizeof message, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(message, sizeof message, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return MPI_Wtime() - start;
}

}  // namespace

double measure_rank_latency_us() {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double best = -1.0;
  if (size >= 2 && rank <= 1) {
    bounce(rank, kWarmUpTrips);
    for (int block = 0; block < kBlocks; ++block) {
      const double half_trip_us = bounce(rank, kTripsPerBlock) / (2.0 * kTripsPerBlock) * 1e6;
      best = best < 0 ? half_trip_us : std::min(best, half_trip_us);
    }
  }
  // The others sleep rather than spin in a barrier, which would take a shared core from ranks 0 and 1.
  barrier_asleep();
  return rank == 0 ? best : -1.0;
}

}  // namespace matexbench
