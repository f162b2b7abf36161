// intercomm.h - intercommunicator collectives, served as phases inside each
// group (MATEX_INTERPOSE=all only: libmatexcomm has no algorithm between two
// groups, so auto leaves them to MPI). Each group reduces or gathers on its
// own intracommunicator through libmatexcomm, the two group leaders exchange
// the result with one MPI send-receive on the merged communicator, and each
// leader broadcasts what it received inside its group through libmatexcomm.
// Cost: a local collective, one leader exchange, a local broadcast.
// Preconditions: routed to a state with inter set and groups built; counts
// fit an int (the leaders exchange through int-count MPI calls).
#pragma once

#include <mpi.h>

#include "comm_state.h"
#include "mpi_types.h"

namespace matexinterpose {

// Each group receives the reduction of the other group's inputs.
int inter_allreduce(CommState& state, MPI_Comm comm, const void* sendbuf, void* recvbuf, int count,
                    MPI_Datatype type, const Reduction& reduction);

// root: MPI_ROOT at the sender, MPI_PROC_NULL at the rest of its group, the
// sender's rank in the other group at the receivers.
int inter_bcast(CommState& state, MPI_Comm comm, void* buffer, int count, MPI_Datatype type,
                const TypedBuffer& view, int root);

// Each group receives the other group's blocks, in rank order.
int inter_allgather(CommState& state, MPI_Comm comm, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                    void* recvbuf, int recvcount, MPI_Datatype recvtype);

// The intracommunicator broadcast body (entry_data_movement.cc), for the
// receiving group's local phase.
int bcast_served(CommState& state, MPI_Comm comm, void* buffer, MPI_Aint count, MPI_Datatype type,
                 const TypedBuffer& view, int root);

}  // namespace matexinterpose
