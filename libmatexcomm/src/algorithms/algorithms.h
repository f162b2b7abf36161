// algorithms.h - the algorithms of every collective, and the registry
// that names them and picks one per call.
//
// Selection is a pure function of (message size, layout, configuration), all
// of which are identical on every rank, so every rank picks the same
// algorithm without talking to the others.
#pragma once

#include <string>
#include <vector>

#include "algorithms/collective_context.h"

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
struct AllreduceThresholds {
  size_t rab_max = 0;          // MATEX_RAB_MAX_BYTES
  size_t single_copy_min = 0;  // MATEX_CMA_MIN_BYTES
  size_t single_copy_max = 0;  // MATEX_CMA_MAX_BYTES
};
// in_place: sendbuf == recvbuf on this rank. Ranks of one node must agree on
// it for messages of MATEX_CMA_MAX_BYTES and more (else MATEX_ERR_MISMATCH).
int select_allreduce(const CollectiveContext& ctx, const std::string& choice, size_t bytes, bool in_place,
                     const AllreduceThresholds& sizes);

// Broadcast: "flat" or "hier"; auto = hier when there is more than one node.
std::string select_broadcast(const CollectiveContext& ctx, const std::string& choice);

}  // namespace matexcomm
