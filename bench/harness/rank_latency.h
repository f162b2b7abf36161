// rank_latency.h - the latency between ranks 0 and 1 printed in the preamble:
// how far apart the cores are that the run got. On a shared or virtual
// machine that changes from run to run (docs/benchmarks.md): on the 2-core
// VM of 3 December 2026 it read 0.15-0.19 us in some runs and 0.40-0.46 us in
// others, and the shared-memory allreduces ran 5-8x slower in the latter.
#pragma once

namespace matexbench {

// Collective over MPI_COMM_WORLD: ranks 0 and 1 bounce an 8-byte message
// (MPI_Send / MPI_Recv) 200 times to warm up, then in 3 blocks of 1,000 round
// trips; the other ranks wait asleep. Returns the best block's half round
// trip in microseconds on rank 0, and -1 elsewhere or with a single rank.
// Cost: about 1-3 ms.
double measure_rank_latency_us();

}  // namespace matexbench
