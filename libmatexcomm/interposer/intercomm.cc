#include "intercomm.h"

#include <climits>
#include <cstring>

#include "mpi_errors.h"

namespace matexinterpose {

namespace {

constexpr int kTag = 0;  // the merged communicator is ours alone; calls keep their order

// This group's own state (built on first use, collectively over the group).
CommState* local_state(CommState& state) {
  CommState* local = state_of(state.groups.local);
  return local != nullptr && local->comm != nullptr ? local : nullptr;
}

int no_local_state(MPI_Comm comm, const char* entry) {
  return raise_mpi_on(comm, entry, MPI_ERR_INTERN);
}

}  // namespace

int inter_allreduce(CommState& state, MPI_Comm comm, const void* sendbuf, void* recvbuf, int count,
                    MPI_Datatype type, const Reduction& reduction) {
  CommState* local = local_state(state);
  if (local == nullptr) return no_local_state(comm, "MPI_Allreduce (intercommunicator)");
  const size_t bytes = static_cast<size_t>(count) * reduction.element_bytes;
  local->scratch.resize(bytes);
  matex_status_t status = matex_reduce(local->comm, sendbuf, local->scratch.data(),
                                       static_cast<size_t>(count) * reduction.count_factor, reduction.dtype,
                                       reduction.op, 0);
  if (status != MATEX_SUCCESS) return raise_on(comm, "MPI_Allreduce (intercommunicator)", status);
  if (local->rank == 0) {
    int rc = PMPI_Sendrecv(local->scratch.data(), count, type, state.groups.remote_offset, kTag, recvbuf, count, type,
                           state.groups.remote_offset, kTag, state.groups.merged, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, "MPI_Allreduce (intercommunicator leaders)", rc);
  }
  return raise_on(comm, "MPI_Allreduce (intercommunicator)",
                  matex_broadcast(local->comm, recvbuf, bytes, MATEX_UINT8, 0));
}

int inter_bcast(CommState& state, MPI_Comm comm, void* buffer, int count, MPI_Datatype type,
                const TypedBuffer& view, int root) {
  if (root == MPI_PROC_NULL) return MPI_SUCCESS;
  if (root == MPI_ROOT) {
    int rc = PMPI_Send(buffer, count, type, state.groups.remote_offset, kTag, state.groups.merged);
    return raise_mpi_on(comm, "MPI_Bcast (intercommunicator root)", rc);
  }
  CommState* local = local_state(state);
  if (local == nullptr) return no_local_state(comm, "MPI_Bcast (intercommunicator)");
  if (local->rank == 0) {
    int rc = PMPI_Recv(buffer, count, type, state.groups.remote_offset + root, kTag, state.groups.merged,
                       MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, "MPI_Bcast (intercommunicator leader)", rc);
  }
  return bcast_served(*local, comm, buffer, count, type, view, 0);
}

int inter_allgather(CommState& state, MPI_Comm comm, const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                    void* recvbuf, int recvcount, MPI_Datatype recvtype) {
  const char* entry = "MPI_Allgather (intercommunicator)";
  CommState* local = local_state(state);
  if (local == nullptr) return no_local_state(comm, entry);
  TypedBuffer send_view;
  TypedBuffer recv_view;
  int rc = describe(sendbuf, sendcount, sendtype, &send_view);
  if (rc == MPI_SUCCESS) rc = describe(recvbuf, static_cast<MPI_Aint>(recvcount) * state.groups.remote_size,
                                       recvtype, &recv_view);
  const size_t mine = send_view.bytes;
  const size_t gathered = mine * static_cast<size_t>(local->size);
  if (rc == MPI_SUCCESS && (gathered > INT_MAX || recv_view.bytes > INT_MAX)) rc = MPI_ERR_COUNT;
  if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
  // Local phase: this group's blocks, gathered as bytes at its leader.
  std::vector<char>& ours = local->scratch;
  ours.resize(gathered + mine);
  const void* source = send_view.start;
  if (!send_view.contiguous) {
    rc = pack(sendbuf, sendcount, sendtype, ours, gathered, mine, comm);
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
    source = ours.data() + gathered;
  }
  matex_status_t status = matex_gather(local->comm, source, ours.data(), mine, MATEX_UINT8, 0);
  if (status != MATEX_SUCCESS) return raise_on(comm, entry, status);
  // The leaders trade their groups' blocks; each group then shares what came.
  std::vector<char>& theirs = state.scratch;
  theirs.resize(recv_view.bytes);
  if (local->rank == 0) {
    rc = PMPI_Sendrecv(ours.data(), static_cast<int>(gathered), MPI_BYTE, state.groups.remote_offset, kTag,
                       theirs.data(), static_cast<int>(recv_view.bytes), MPI_BYTE, state.groups.remote_offset, kTag,
                       state.groups.merged, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, "MPI_Allgather (intercommunicator leaders)", rc);
  }
  status = matex_broadcast(local->comm, theirs.data(), recv_view.bytes, MATEX_UINT8, 0);
  if (status != MATEX_SUCCESS) return raise_on(comm, entry, status);
  if (recv_view.contiguous) {
    if (recv_view.bytes > 0) std::memcpy(recv_view.start, theirs.data(), recv_view.bytes);
    return MPI_SUCCESS;
  }
  rc = unpack(theirs, 0, recv_view.bytes, recvbuf, static_cast<MPI_Aint>(recvcount) * state.groups.remote_size,
              recvtype, comm);
  return raise_mpi_on(comm, entry, rc);
}

}  // namespace matexinterpose
