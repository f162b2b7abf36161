// call_agreement.h - before a collective moves data, every rank of a
// communicator that spans several nodes confirms that all ranks call the same
// collective with the same arguments. Inside a node the shared-memory channel
// compares its peers' call descriptors anyway; across nodes nothing else
// would notice that one node reduces with sum and another with max (a
// silently wrong result), that counts differ (truncation, or a crash inside
// MPI), or that a rank skipped a call (its next call pairs with the others'
// skipped one).
//
// How: the minimum of every field and of its negation, which are equal
// everywhere exactly when all ranks agree. Cost per collective: one small
// MPI_Iallreduce inside the node; with several nodes also one MPI_Allreduce
// among the node leaders and one MPI_Ibcast inside the node (2 x
// kSignatureFields int64 each, latency-bound). On a mismatch, one
// MPI_Allgather of the signatures names the ranks. The waits have no
// timeout, since the collectives they guard may have none either (a rank
// may save a checkpoint for an hour before a barrier); after
// MATEX_STALL_WARNING_SECONDS they warn once, naming the call.
// MATEX_CHECK_CALLS=off skips the check.
// Precondition: every rank calls agree_call at the same point of the same
// collective, in the same order (the communicator's collectives do).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/backoff.h"
#include "matexcomm/matexcomm.h"
#include "matex/topology/layout.h"

namespace matexcomm {

enum class CallKind : int64_t {
  kAllreduce = 1,
  kBroadcast,
  kAllgather,
  kReduceScatter,
  kReduce,
  kGather,
  kScatter,
  kAlltoall,
  kBarrier,
};

// What every rank must agree on. -1 in a field: not part of this call (an op
// for a broadcast), or allowed to differ between ranks (the v-variants'
// counts, which they agree on separately).
struct CallSignature {
  CallKind kind;
  int64_t count = -1;
  int64_t dtype = -1;
  int64_t op = -1;
  int64_t root = -1;
};
constexpr int kSignatureFields = 5;

// A count as a signature field: -1 stays "not compared"; counts no buffer
// can have are capped, so that negating them stays defined.
inline int64_t count_field(int count) { return count; }  // -1: not compared
inline int64_t count_field(size_t count) {
  return static_cast<int64_t>(std::min<size_t>(count, static_cast<size_t>(INT64_MAX) - 1));
}
template <class Count>
CallSignature data_call(CallKind kind, Count count, matex_dtype_t dtype) {
  return {kind, count_field(count), static_cast<int64_t>(dtype)};
}
inline CallSignature reduction_call(CallKind kind, size_t count, matex_dtype_t dtype, matex_op_t op) {
  return {kind, count_field(count), static_cast<int64_t>(dtype), static_cast<int64_t>(op)};
}
template <class Count>
CallSignature rooted_call(CallKind kind, Count count, matex_dtype_t dtype, int root) {
  return {kind, count_field(count), static_cast<int64_t>(dtype), -1, root};
}

// "allreduce count=1021 dtype=float32 op=sum", "broadcast count=8 dtype=int64 root=2"
std::string describe_call(const CallSignature& signature);

// Throws Error(MATEX_ERR_MISMATCH) on every rank alike when the ranks'
// signatures differ, naming the call (`sequence`, this rank's count of
// collectives) and which ranks (with their node and local rank, from
// `layout`, the layout of `comm`) called what.
struct CallCheckComms {
  MPI_Comm all;      // every rank of the communicator
  MPI_Comm node;     // the ranks of this rank's node
  MPI_Comm leaders;  // local rank 0 of every node; MPI_COMM_NULL elsewhere
  const topo::Layout* layout;
  double warn_seconds;  // MATEX_STALL_WARNING_SECONDS
  BackoffPace pace;
};
void agree_call(const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine);

}  // namespace matexcomm
