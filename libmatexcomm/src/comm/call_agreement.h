// call_agreement.h - before a collective moves data, every rank of a
// communicator confirms that all ranks call the same collective with the same
// arguments. Across nodes nothing else would notice that one node reduces
// with sum and another with max (a silently wrong result), that counts differ
// (truncation, or a crash inside MPI), or that a rank skipped a call (its
// next call pairs with the others' skipped one). Inside a node the
// shared-memory channel compares its peers' call descriptors as well.
//
// How: recursive doubling over all ranks by point to point. Every rank sends
// its call's signature and a "disagreement seen" flag (as a header, or in the
// tag of a message that carries data, below) to partner
// rank ^ 1, ^ 2, ^ 4, ...; the ranks above the largest power of two first
// fold into a partner below it and get its final message at the end. A rank
// flags any header unlike its own, or already flagged, so after log2(p)
// rounds every rank knows whether all agree. Every receive has room for the
// largest message any rank sends, so ranks that disagree on what they send
// still pair their messages and never truncate one.
// Cost per collective: floor(log2 p) rounds of small messages, plus two
// where p is not a power of two; about one latency-bound MPI_Allreduce. On a mismatch, one
// MPI_Allgather of the signatures names the ranks.
//
// A small allreduce may ride along (`CarriedData`, the flat algorithm below
// kCarriedMaxBytes across nodes): its data travels in the same messages and
// is reduced at every round, so the check and the allreduce cost one
// exchange instead of two. Both partners of a round apply the op to the same
// two values in the same order (the lower rank's first), so every rank ends
// with the same bits. Such a message holds the data alone, and its tag
// carries the rest of the signature (kind, dtype, op, and the flag; the count
// is its length over the dtype's size): a message the size of MPI's own.
// Open MPI sends up to 256 B about twice as fast as anything longer, and a
// 48-byte header pushed allreduces of 209-256 B past that step (1.5x MPI's
// time at 256 B on 4 ranks here).
//
// The waits have no timeout, since the collectives they guard may have none
// either (a rank may save a checkpoint for an hour before a barrier); after
// MATEX_STALL_WARNING_SECONDS they warn once, naming the call.
// MATEX_CHECK_CALLS=off skips the check.
// Precondition: every rank calls agree_call at the same point of the same
// collective, in the same order (the communicator's collectives do), and
// `all` carries no other point-to-point traffic (the check receives any tag
// from its partner).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/backoff.h"
#include "matexcomm/matexcomm.h"
#include "topology/layout.h"

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

// The point-to-point tag of the check's messages that hold a whole header,
// on the communicator's own duplicate of its MPI communicator.
constexpr int kCallCheckTag = 0x6d63;
// Messages that carry data take the tags from kCarriedTagBase on: the base
// plus the signature's code (call_agreement.cc), below kCarriedTagBase +
// kCarriedTagCount, which stays under 32767, the least MPI_TAG_UB that MPI allows.
constexpr int kCarriedTagBase = 0x4000;
constexpr int kCarriedTagCount = 0x2000;
static_assert(kCallCheckTag < kCarriedTagBase || kCallCheckTag >= kCarriedTagBase + kCarriedTagCount,
              "the whole-header tag must lie outside the carried tags");
// Data that travels with the check: `count` elements from `input`, reduced
// with `op` over all ranks into `output` (avg is summed; the caller divides).
// `output` is written only when the ranks agree; it may equal `input`.
struct CarriedData {
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;
  matex_dtype_t dtype = MATEX_FLOAT32;
  matex_op_t op = MATEX_SUM;
};
// The largest allreduce that rides along with the check (flat, under auto).
constexpr size_t kCarriedMaxBytes = 16 * 1024;

// Throws Error(MATEX_ERR_MISMATCH) on every rank alike when the ranks'
// signatures differ, naming the call (`sequence`, this rank's count of
// collectives) and which ranks (with their node and local rank, from
// `layout`, the layout of `comm`) called what. With `carried`, its data holds
// the reduction over all ranks when the call returns.
struct CallCheckComms {
  MPI_Comm all;  // every rank of the communicator
  const topo::Layout* layout;
  double warn_seconds;  // MATEX_STALL_WARNING_SECONDS
  BackoffPace pace;
};
void agree_call(const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine,
                const CarriedData* carried = nullptr);

}  // namespace matexcomm
