// comm_state.h - libmatexcomm's state for one user communicator, built at
// the first call that needs it and cached as an MPI attribute on that
// communicator.
//
// - Building it communicates on that communicator only (collective there).
// - MPI_Comm_dup does not copy it (MPI_COMM_NULL_COPY_FN): a dup gets its own.
// - MPI_Comm_free deletes it through the attribute's delete callback, locally,
//   without a collective: the shared-memory segment, the library's private
//   communicators and their context ids all go with it.
// - An attribute on MPI_COMM_SELF, which MPI_Finalize deletes before anything
//   else, prints the report and deletes every state still alive.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexinterpose {

// An intercommunicator's collectives are served as their local phases (see
// intercomm.cc): these are what they run on.
struct InterGroups {
  MPI_Comm local = MPI_COMM_NULL;   // this group, as an intracommunicator (its own state serves it)
  MPI_Comm merged = MPI_COMM_NULL;  // both groups: the leaders' exchanges
  int remote_offset = 0;            // merged rank of the remote group's rank 0
  int remote_size = 0;
};

struct CommState {
  matex_comm_t comm = nullptr;  // null: libmatexcomm cannot serve this communicator (intercommunicators too)
  int rank = 0;
  int size = 0;
  bool inter = false;
  InterGroups groups;         // inter only; local == MPI_COMM_NULL when it could not be built
  // Under auto, the last answer of matex_auto_algorithm per collective, so
  // that a loop of equal calls asks once. Only "MPI or not" is kept. It
  // depends on the size and on what auto's trials have settled, which changes
  // only through served calls that every rank makes alike, so every rank
  // keeps the same answer (a settled flat is served by libmatexcomm's flat
  // until the size changes, and then goes straight to MPI).
  struct AutoAnswer {
    size_t bytes = SIZE_MAX;
    bool runs_mpi = false;
  } auto_answer[MATEX_COLL_REDUCE + 1];
  std::vector<char> scratch;  // packing and uneven reduce_scatter; one thread per communicator at a time
};

// The state of a communicator, built on first use (collective over comm; for
// an intercommunicator, over both groups). A state whose set-up failed on any
// rank has comm == nullptr (inter: groups.local == MPI_COMM_NULL) on every
// rank, and says why once on stderr.
CommState* state_of(MPI_Comm comm);
// The state if it exists already (no collective, no set-up), else null.
CommState* known_state_of(MPI_Comm comm);

// Called by the MPI_Init wrappers on every rank, and otherwise on first use:
// registers the MPI_Finalize hook. `from_init`: every rank registers it in
// MPI_Init, so the report may sum over MPI_COMM_WORLD.
void install_finalize_hook(bool from_init);

// True once MPI_Finalize has begun: every call goes to PMPI.
bool finalizing();

}  // namespace matexinterpose
