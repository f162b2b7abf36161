// route.h - the part of the route every collective shares. It is decided
// alike on every rank: only from what MPI requires to match across ranks (the
// communicator, counts, datatypes of reductions, ops, roots) and from the
// settings, which every rank reads from the same environment.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "call_report.h"
#include "comm_state.h"
#include "matexcomm/matexcomm.h"

namespace matexinterpose {

// Before looking at the call's own arguments: MPI_Finalize has begun, the
// interposer is off, or comm is MPI_COMM_NULL. Reason::kServed: go on.
Reason route_before_arguments(MPI_Comm comm);

// After the arguments qualified: the communicator's state (built on first
// use, collectively) and, under MATEX_INTERPOSE=auto, whether libmatexcomm's
// own choice for `bytes` is MPI's collective anyway (then MPI runs it without
// the detour). `coll` < 0: a call for which libmatexcomm has only MPI's own
// algorithm (allgather, reduce_scatter, barrier), which auto leaves to MPI
// without building a state. On kServed, *state is usable.
// `inter_served`: the entry point serves intercommunicators (as local phases,
// under MATEX_INTERPOSE=all; intercomm.cc); *state->inter says which.
Reason route_to_state(MPI_Comm comm, int coll, size_t bytes, CommState** state, bool inter_served = false);

constexpr int kOnlyMpiAlgorithm = -1;

}  // namespace matexinterpose
