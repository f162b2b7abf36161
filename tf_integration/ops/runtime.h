// runtime.h - the process's communicator and engine, shared by every op
// kernel. Python (matex.init) creates them once through the extern "C"
// functions below, loaded with ctypes from this same library; kernels refuse
// to run before that, and fail cleanly after shutdown.
#pragma once

#include "absl/status/status.h"
#include "matexcomm/matexcomm.h"

namespace matex_tf {

// The engine in *engine, or FailedPrecondition saying why there is none
// (matex.init() has not run, or shutdown already did).
absl::Status running_engine(matex_engine_t* engine);

// Process set `process_set_id`'s engine (0: the job's) in *engine and its
// number of ranks in *size (when not null), or FailedPrecondition saying why there is none
// (not registered, or this rank is not one of its ranks).
absl::Status running_engine(int64_t process_set_id, matex_engine_t* engine, int* size);

}  // namespace matex_tf

extern "C" {
// 0 on success; otherwise matex_tf_last_error() says why. Idempotent.
int matex_tf_initialize(void);
// Collective: destroys the engine (pending tensors fail) and finalizes MPI.
int matex_tf_shutdown(void);
int matex_tf_rank(void);
// Ends the whole job (MPI_Abort): for an unhandled Python exception on one rank,
// which would otherwise leave the others waiting for its tensors.
void matex_tf_abort(int code);
int matex_tf_size(void);
// This rank's place in the job's topology (matex_comm_local_rank and friends
// on the runtime's communicator): its rank among the ranks of its node, how
// many share the node, the node's index and how many nodes there are. 0 on
// success; before matex_tf_initialize it fails.
int matex_tf_topology(int* local_rank, int* local_size, int* node_index, int* node_count);
const char* matex_tf_last_error(void);
// Collective over `ranks` (n sorted, distinct global ranks, this rank among
// them; the other ranks do not call it): process set `id` (> 0, not yet
// registered) gets a communicator and an engine of its own, for ops whose
// process_set_id is `id`. Every member registers its sets in the same order.
int matex_tf_add_process_set(int id, const int* ranks, int n);
// Collective over process set `id`'s ranks: stops its engine (pending tensors
// fail) and frees its communicator.
int matex_tf_remove_process_set(int id);
// Collective: this rank's CPU block and thread counts (matex_thread_budget on
// the runtime's communicator); rank 0's *table gets every rank's. 0 on success.
int matex_tf_thread_budget(matex_thread_budget_t* budget, int* cpus, size_t cpus_capacity, char* table,
                           size_t table_capacity);
}
