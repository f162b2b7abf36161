// algorithms.h - the algorithms of every collective (one file each), and
// their functions by id (core/algorithm_catalog.h names them). Which one runs
// is select/'s business.
#pragma once

#include <string>
#include <vector>

#include "algorithms/collective_context.h"
#include "core/algorithm_catalog.h"

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

// ---- by id (algorithm_table.cc) ----
using AllreduceFunction = void (*)(const CollectiveContext&, const AllreduceArgs&);
using BroadcastFunction = void (*)(const CollectiveContext&, void* buffer, size_t count, matex_dtype_t dtype,
                                   int root);
// The function of an allreduce id (AllreduceId) or a broadcast id (BroadcastId).
AllreduceFunction allreduce_function(int id);
BroadcastFunction broadcast_function(int id);

}  // namespace matexcomm
