// algorithms.h - the algorithms of every collective, and the registry
// that names them and picks one per call.
//
// Selection is a pure function of (message size, layout, configuration, the
// allreduce table rank 0 broadcast at creation, the allreduce trials'
// settled choices), all of which are identical on every rank, so every rank
// picks the same algorithm without talking to the others.
#pragma once

#include <string>
#include <vector>

#include "algorithms/allreduce_table.h"
#include "algorithms/broadcast_table.h"
#include "algorithms/collective_context.h"
#include "algorithms/allreduce_trials.h"

namespace matexcomm {

// ---- allreduce (one file each) ----
void allreduce_flat(const CollectiveContext& ctx, const AllreduceArgs& args);
void allreduce_rs_ar_ag(const CollectiveContext& ctx, const AllreduceArgs& args);
void allreduce_rab(const CollectiveContext& ctx, const AllreduceArgs& args);
void allreduce_rs_ar_ag_cma(const CollectiveContext& ctx, const AllreduceArgs& args);
void allreduce_oneshot(const CollectiveContext& ctx, const AllreduceArgs& args);

// ---- broadcast ----
void broadcast_flat(const CollectiveContext& ctx, void* buffer, size_t count, matex_dtype_t dtype, int root);
void broadcast_hierarchical(const CollectiveContext& ctx, void* buffer, size_t count, matex_dtype_t dtype,
                            int root);

// ---- allgather (variable counts; equal counts is the special case) ----
// send == nullptr: in place. counts and displs are in elements, one per rank.
void allgatherv_flat(const CollectiveContext& ctx, const void* send, void* recv, const std::vector<size_t>& counts,
                     const std::vector<size_t>& displs, matex_dtype_t dtype);

// ---- reduce_scatter (equal blocks) ----
// send == nullptr: in place (recv holds the whole input).
void reduce_scatter_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t recvcount,
                         matex_dtype_t dtype, matex_op_t op);

// ---- reduce (rooted) ----
// send == nullptr: in place at root (the root's input is in recv). recv is
// only used at root. avg is divided at root.
void reduce_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                 matex_op_t op, int root);
void reduce_hierarchical(const CollectiveContext& ctx, const void* send, void* recv, size_t count,
                         matex_dtype_t dtype, matex_op_t op, int root);
// Reduce over more than one node with some node holding more than one rank:
// then the two-level version saves network traffic (same on every rank).
bool reduce_prefers_hierarchy(const CollectiveContext& ctx);
// MPI_Reduce over `comm` in pieces of at most INT_MAX/2 elements; send ==
// nullptr: in place at root; recv used at root only. No avg division.
void mpi_reduce(const CollectiveContext& ctx, MPI_Comm comm, const void* send, void* recv, size_t count,
                matex_dtype_t dtype, matex_op_t op, int root);

// ---- gather, scatter, all-to-all (flat MPI: docs/algorithms.md says why) ----
// counts and displs are in elements; send == nullptr (gather) or recv ==
// nullptr (scatter): in place at root. Every count and displacement fits an
// int (checked by the caller).
void gather_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                 int root);
void gatherv_flat(const CollectiveContext& ctx, const void* send, size_t sendcount, void* recv,
                  const std::vector<size_t>& counts, const std::vector<size_t>& displs, matex_dtype_t dtype,
                  int root);
void scatter_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype,
                  int root);
void scatterv_flat(const CollectiveContext& ctx, const void* send, const std::vector<size_t>& counts,
                   const std::vector<size_t>& displs, void* recv, size_t recvcount, matex_dtype_t dtype, int root);
void alltoall_flat(const CollectiveContext& ctx, const void* send, void* recv, size_t count, matex_dtype_t dtype);
void alltoallv_flat(const CollectiveContext& ctx, const void* send, const std::vector<size_t>& sendcounts,
                    const std::vector<size_t>& sdispls, void* recv, const std::vector<size_t>& recvcounts,
                    const std::vector<size_t>& rdispls, matex_dtype_t dtype);

// ---- registry ----
using AllreduceFunction = void (*)(const CollectiveContext&, const AllreduceArgs&);

struct AllreduceAlgorithm {
  const char* name;
  AllreduceFunction run;
  bool hierarchical;  // needs the shared-memory transport
  bool single_copy;   // needs cross-memory attach on every node
};

const std::vector<AllreduceAlgorithm>& allreduce_registry();
// Index into allreduce_registry() of `name`, or -1.
int find_allreduce(const std::string& name);

// Names accepted by matex_set_algorithm for a collective ("auto" included).
std::vector<std::string> algorithm_names(matex_collective_t coll);

// Picks the allreduce algorithm: `choice` is "auto" or a registry name.
// Hierarchical choices fall back to flat when ctx.hierarchical_ok is false,
// single-copy ones to rs_ar_ag when ctx.single_copy_ok is false.
// Under auto, a calibrated table (allreduce_table.h) picks the family by
// size; without one (MATEX_CALIBRATE=off, or nothing to choose between) the
// fixed sizes below do: flat with one rank per node, and on several nodes up
// to flat_max_across_nodes; then up to rab_max the small family (oneshot on
// one node, rab on several); then the rail family, within which the CMA
// sizes decide. That pick (out of place) is the first contender of the
// trials, whose settled choice for the size wins (allreduce_trials.h).
struct AllreduceThresholds {
  size_t rab_max = 0;          // MATEX_RAB_MAX_BYTES
  size_t flat_max_across_nodes = 0;  // flat up to here on several nodes (kCarriedMaxBytes)
  size_t single_copy_min = 0;  // MATEX_CMA_MIN_BYTES
  size_t single_copy_max = 0;  // MATEX_CMA_MAX_BYTES
  const AllreduceTable* table = nullptr;  // the same on every rank, or null everywhere
  const AllreduceTrials* trials = nullptr;  // non-null on every rank or on none
};
// False where auto has nothing to choose and runs flat: a single rank, or no
// shared memory. With one rank per node only a measured table chooses (the
// rail family then cuts MPI's allreduce into MATEX_SHM_CHUNK_BYTES pieces,
// which can be faster); the fixed sizes run flat there.
bool auto_has_allreduce_choice(const CollectiveContext& ctx);
// The family auto runs at `bytes` (auto_has_allreduce_choice must hold).
AllreduceFamily auto_allreduce_family(const CollectiveContext& ctx, size_t bytes, bool in_place,
                                      const AllreduceThresholds& sizes);
// in_place: sendbuf == recvbuf on this rank. Ranks of one node must agree on
// it for messages of MATEX_CMA_MAX_BYTES and more (else MATEX_ERR_MISMATCH).
int select_allreduce(const CollectiveContext& ctx, const std::string& choice, size_t bytes, bool in_place,
                     const AllreduceThresholds& sizes);
// The names behind a table's families here: the small one (oneshot on one
// node, rab on several) and the rail one at `bytes` (the CMA sizes decide).
const char* small_family_algorithm(const CollectiveContext& ctx);
const char* rail_family_algorithm(const CollectiveContext& ctx, size_t bytes, bool in_place,
                                  const AllreduceThresholds& sizes);

// Broadcast: "flat" or "hier"; auto = hier when there is more than one node.
// Whether broadcast's hierarchy can help: several nodes, some with several ranks.
bool broadcast_hierarchy_helps(const CollectiveContext& ctx);
// Broadcast: a forced choice; else flat unless the hierarchy can help, where
// `table` (from a tuning file, the same on every rank) picks by `bytes`, and
// without one hier runs.
std::string select_broadcast(const CollectiveContext& ctx, const std::string& choice, size_t bytes,
                             const BroadcastTable* table);

}  // namespace matexcomm
