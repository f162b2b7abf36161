#include "comm/call_agreement.h"

#include <map>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

const char* kind_name(CallKind kind) {
  switch (kind) {
    case CallKind::kAllreduce: return "allreduce";
    case CallKind::kBroadcast: return "broadcast";
    case CallKind::kAllgather: return "allgather";
    case CallKind::kReduceScatter: return "reduce_scatter";
    case CallKind::kReduce: return "reduce";
    case CallKind::kGather: return "gather";
    case CallKind::kScatter: return "scatter";
    case CallKind::kAlltoall: return "alltoall";
    case CallKind::kBarrier: return "barrier";
  }
  return "an unknown collective";
}

void pack(const CallSignature& s, int64_t* fields) {
  fields[0] = static_cast<int64_t>(s.kind);
  fields[1] = s.count;
  fields[2] = s.dtype;
  fields[3] = s.op;
  fields[4] = s.root;
}

CallSignature unpack(const int64_t* fields) {
  return {static_cast<CallKind>(fields[0]), fields[1], fields[2], fields[3], fields[4]};
}

// Polls `request` with the project's backoff. No timeout: the call check
// must not add one where the collective itself has none (a rank may spend
// an hour saving a checkpoint before a barrier, or wait inside MPI for
// another node). After `warn_seconds` it warns once, naming the call.
void wait_request(MPI_Request* request, const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine,
                  const char* whom) {
  Backoff backoff(1e9, comms.pace);
  bool warned = false;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Test of the call check");
    if (done) return;
    backoff.pause();
    if (!warned && backoff.elapsed_seconds() > comms.warn_seconds) {
      warned = true;
      MATEX_LOG(LogLevel::kWarn, "still waiting after " + std::to_string(backoff.elapsed_seconds()) + " s for " +
                                     whom + " to reach collective call #" + std::to_string(sequence) + " (" +
                                     describe_call(mine) + "); is every rank calling the same collectives?");
    }
  }
}

std::string rank_list(const std::vector<int>& ranks, const topo::Layout& layout) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    text += (i ? ", " : "") + std::string("rank ") + std::to_string(r) + " (local rank " +
            std::to_string(layout.local_rank_of_rank[r]) + " of node " + std::to_string(layout.node_of_rank[r]) +
            ")";
  }
  return text;
}

}  // namespace

std::string describe_call(const CallSignature& s) {
  std::string text = kind_name(s.kind);
  if (s.count >= 0) text += " count=" + std::to_string(s.count);
  if (s.dtype >= 0) text += std::string(" dtype=") + dtype_name(static_cast<matex_dtype_t>(s.dtype));
  if (s.op >= 0) text += std::string(" op=") + op_name(static_cast<matex_op_t>(s.op));
  if (s.root >= 0) text += " root=" + std::to_string(s.root);
  return text;
}

void agree_call(const CallCheckComms& comms, uint64_t sequence, const CallSignature& mine) {
  const topo::Layout& layout = *comms.layout;
  int64_t both[2 * kSignatureFields];
  pack(mine, both);
  for (int i = 0; i < kSignatureFields; ++i) both[kSignatureFields + i] = -both[i];
  int64_t lowest[2 * kSignatureFields];
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(both, lowest, 2 * kSignatureFields, MPI_INT64_T, MPI_MIN, comms.node, &request),
            "MPI_Iallreduce of call signatures");
  wait_request(&request, comms, sequence, mine, "the ranks of this node");
  if (layout.node_count > 1) {
    if (comms.leaders != MPI_COMM_NULL) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, lowest, 2 * kSignatureFields, MPI_INT64_T, MPI_MIN, comms.leaders),
                "MPI_Allreduce of call signatures among node leaders");
    }
    check_mpi(MPI_Ibcast(lowest, 2 * kSignatureFields, MPI_INT64_T, 0, comms.node, &request),
              "MPI_Ibcast of call signatures");
    wait_request(&request, comms, sequence, mine, "the other nodes");
  }
  bool agreed = true;
  for (int i = 0; i < kSignatureFields; ++i) agreed = agreed && lowest[i] == -lowest[kSignatureFields + i];
  if (agreed) return;

  // Every rank saw the same minima, so every rank is here.
  const int size = layout.world_size;
  const int rank = layout.world_rank;
  std::vector<int64_t> all(static_cast<size_t>(size) * kSignatureFields);
  check_mpi(MPI_Allgather(both, kSignatureFields, MPI_INT64_T, all.data(), kSignatureFields, MPI_INT64_T, comms.all),
            "MPI_Allgather of call signatures");
  // Distinct calls in the order of the first rank making each: the same text on every rank.
  std::vector<std::string> calls;
  std::map<std::string, std::vector<int>> callers;
  for (int r = 0; r < size; ++r) {
    const std::string call = describe_call(unpack(&all[static_cast<size_t>(r) * kSignatureFields]));
    if (callers.find(call) == callers.end()) calls.push_back(call);
    callers[call].push_back(r);
  }
  std::string message = "ranks disagree on collective call #" + std::to_string(sequence) + " of this communicator:";
  for (size_t i = 0; i < calls.size(); ++i) {
    message += (i ? "; " : " ") + rank_list(callers[calls[i]], layout) + (callers[calls[i]].size() == 1 ? " calls " : " call ") +
               calls[i];
  }
  message += " (this is rank " + std::to_string(rank) +
             "; a rank that skipped a call, or called collectives in another order, pairs its next call with the "
             "others' skipped one)";
  MATEX_RAISE(MATEX_ERR_MISMATCH, message);
}

}  // namespace matexcomm
