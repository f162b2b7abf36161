// memcpy_bandwidth.h - the single-core memcpy bandwidth printed in the
// preamble: the yardstick for the shared-memory copies inside a node.
#pragma once

namespace matexbench {

// Best of `repeats` memcpy calls between two pre-touched 64 MiB buffers:
// bytes copied / seconds, in GB/s (1e9).
double measure_memcpy_gbps(int repeats = 5);

// Collective over MPI_COMM_WORLD: rank 0 measures while the other ranks wait
// asleep (not spinning in a barrier, which would steal a shared core).
// Returns the bandwidth on rank 0, 0 elsewhere.
double measure_memcpy_gbps_on_rank0();

}  // namespace matexbench
