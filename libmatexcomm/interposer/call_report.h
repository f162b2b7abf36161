// call_report.h - what the interposer did with each call: served by
// libmatexcomm or handed to PMPI, and why. Counted per process with atomics
// (MPI_THREAD_MULTIPLE safe); MATEX_INTERPOSE_REPORT=1 prints the sums over
// MPI_COMM_WORLD from rank 0 at MPI_Finalize.
#pragma once

#include <cstddef>

namespace matexinterpose {

// One row of the report per MPI entry point.
enum class Entry {
  kAllreduce,
  kReduce,
  kBcast,
  kAllgather,
  kAllgatherv,
  kReduceScatterBlock,
  kReduceScatter,
  kBarrier,
  kIallreduce,
  kIreduce,
  kIbcast,
  kIallgather,
  kIallgatherv,
  kIreduceScatterBlock,
  kIreduceScatter,
  kIbarrier,
  kLargeCount,  // MPI-4 _c forms (MPI libraries that have them)
  kPersistent,  // MPI-4 _init forms
  kCount
};

// Why a call went where it went. kServed is the only one that reaches libmatexcomm.
enum class Reason {
  kServed,
  kInactive,        // MATEX_INTERPOSE=off
  kMpiChoice,       // auto would run MPI's own collective (flat), so MPI runs it without a detour
  kBelowFloor,      // auto, fewer bytes than MATEX_INTERPOSE_MIN_BYTES
  kDatatype,        // not a predefined type that maps to a libmatexcomm dtype (reductions)
  kOp,              // user-defined op, MINLOC/MAXLOC, logical ops, or an op the type does not take
  kIntercomm,       // intercommunicators
  kInvalidArgument, // MPI_COMM_NULL, a null datatype, a negative count, a bad root: MPI reports it
  kNonblocking,     // I-forms: MPI's own, so that they progress while the caller computes
  kMpi4Form,        // large-count and persistent forms
  kTooLarge,        // data movement of more than 2 GiB (MPI_Pack and the MPI legs count in ints)
  kNoState,         // libmatexcomm could not be set up on this communicator (warned once)
  kAfterFinalize,   // MPI_Finalize has begun
  kCount
};

void count_call(Entry entry, Reason reason, size_t bytes);

// Collective over MPI_COMM_WORLD when `every_rank` (all ranks installed the
// teardown in MPI_Init), else rank 0's own counts. Prints on rank 0's stderr.
void print_report(bool every_rank);

}  // namespace matexinterpose
