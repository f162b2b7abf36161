// entry_data_movement.cc - MPI_Bcast, MPI_Allgather and MPI_Allgatherv (and
// their MPI-4 large-count forms), moved as bytes. Any committed datatype
// qualifies: only the type signature must match across ranks, so the route
// depends on byte counts alone, and a rank whose buffer is not one
// contiguous run packs it into scratch memory first (and unpacks after).
#include <mpi.h>

#include <climits>
#include <vector>

#include "call_report.h"
#include "intercomm.h"
#include "mpi_errors.h"
#include "mpi_types.h"
#include "route.h"

namespace matexinterpose {

int bcast_served(CommState& state, MPI_Comm comm, void* buffer, MPI_Aint count, MPI_Datatype type,
                 const TypedBuffer& view, int root) {
  if (view.contiguous) {
    return raise_on(comm, "MPI_Bcast", matex_broadcast(state.comm, view.start, view.bytes, MATEX_UINT8, root));
  }
  std::vector<char>& scratch = state.scratch;
  scratch.resize(view.bytes);
  if (state.rank == root) {
    int rc = pack(buffer, count, type, scratch, 0, view.bytes, comm);
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, "MPI_Bcast (packing the root's datatype)", rc);
  }
  matex_status_t status = matex_broadcast(state.comm, scratch.data(), view.bytes, MATEX_UINT8, root);
  if (status != MATEX_SUCCESS) return raise_on(comm, "MPI_Bcast", status);
  if (state.rank == root) return MPI_SUCCESS;
  int rc = unpack(scratch, 0, view.bytes, buffer, count, type, comm);
  return raise_mpi_on(comm, "MPI_Bcast (unpacking into the datatype)", rc);
}

namespace {

bool root_is_valid(const CommState& state, int root) {
  if (state.inter) return root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < state.groups.remote_size);
  return root >= 0 && root < state.size;
}

template <class Count, class Fallback>
int bcast(Entry entry, void* buffer, Count count, MPI_Datatype type, int root, MPI_Comm comm, Fallback&& pmpi) {
  Reason reason = route_before_arguments(comm);
  TypedBuffer view;
  CommState* state = nullptr;
  if (reason == Reason::kServed && (count < 0 || type == MPI_DATATYPE_NULL ||
                                    describe(buffer, static_cast<MPI_Aint>(count), type, &view) != MPI_SUCCESS)) {
    reason = Reason::kInvalidArgument;
  }
  if (reason == Reason::kServed && view.bytes > kMaxMovedBytes) reason = Reason::kTooLarge;
  if (reason == Reason::kServed) reason = route_to_state(comm, MATEX_COLL_BROADCAST, view.bytes, &state, true);
  if (reason == Reason::kServed && !root_is_valid(*state, root)) reason = Reason::kInvalidArgument;
  if (reason == Reason::kServed && state->inter && count > INT_MAX) reason = Reason::kIntercomm;
  count_call(entry, reason, view.bytes);
  if (reason != Reason::kServed) return pmpi();
  if (state->inter) return inter_bcast(*state, comm, buffer, static_cast<int>(count), type, view, root);
  return bcast_served(*state, comm, buffer, static_cast<MPI_Aint>(count), type, view, root);
}

// One rank's share of an allgather(v): what it sends, and where each block lands.
struct Gathering {
  std::vector<size_t> block_bytes;    // per rank, the type signature's size
  std::vector<MPI_Aint> block_offsets;  // per rank, bytes from the receive buffer's base address
  std::vector<MPI_Aint> block_counts; // per rank, in receive elements
  size_t total = 0;
};

// The common body of MPI_Allgather and MPI_Allgatherv, once routed. Served
// straight on the buffers when every block is one run inside a contiguous
// receive buffer, else through packed scratch memory.
int gather_blocks(CommState& state, const char* entry, MPI_Comm comm, const void* sendbuf, MPI_Aint sendcount,
                  MPI_Datatype sendtype, void* recvbuf, MPI_Datatype recvtype, const Gathering& g) {
  const int me = state.rank;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  TypedBuffer recv_view;
  int rc = describe(recvbuf, 1, recvtype, &recv_view);
  if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
  // Contiguous receive elements (size == extent == true extent) put block r at
  // base + offset[r] as one run.
  bool direct_recv = recv_view.contiguous && recv_view.extent == static_cast<size_t>(recv_view.bytes);
  // ... and offsets the library can count in ints (the packed offsets always fit).
  for (size_t r = 0; r < g.block_offsets.size(); ++r) {
    direct_recv = direct_recv && g.block_offsets[r] >= 0 &&
                  static_cast<size_t>(g.block_offsets[r]) + g.block_bytes[r] <= kMaxMovedBytes;
  }
  TypedBuffer send_view;
  if (!in_place) {
    rc = describe(sendbuf, sendcount, sendtype, &send_view);
    if (rc == MPI_SUCCESS && send_view.bytes != g.block_bytes[me]) rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
  }
  std::vector<char>& scratch = state.scratch;
  if (direct_recv) {
    std::vector<size_t> offsets(g.block_offsets.begin(), g.block_offsets.end());
    const void* send = MATEX_IN_PLACE;
    if (!in_place && send_view.contiguous) {
      send = send_view.start;
    } else if (!in_place) {
      scratch.resize(send_view.bytes);
      rc = pack(sendbuf, sendcount, sendtype, scratch, 0, send_view.bytes, comm);
      if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
      send = scratch.data();
    }
    return raise_on(comm, entry, matex_allgatherv(state.comm, send, g.block_bytes[me], recv_view.start,
                                                  g.block_bytes.data(), offsets.data(), MATEX_UINT8));
  }
  // Packed in rank order in scratch, then unpacked block by block.
  std::vector<size_t> packed(g.block_bytes.size());
  size_t offset = 0;
  for (size_t r = 0; r < packed.size(); ++r) {
    packed[r] = offset;
    offset += g.block_bytes[r];
  }
  scratch.resize(g.total);
  rc = in_place ? pack(byte_address(recvbuf, g.block_offsets[me]), g.block_counts[me], recvtype, scratch, packed[me],
                       g.block_bytes[me], comm)
                : pack(sendbuf, sendcount, sendtype, scratch, packed[me], g.block_bytes[me], comm);
  if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
  matex_status_t status = matex_allgatherv(state.comm, MATEX_IN_PLACE, g.block_bytes[me], scratch.data(),
                                           g.block_bytes.data(), packed.data(), MATEX_UINT8);
  if (status != MATEX_SUCCESS) return raise_on(comm, entry, status);
  for (size_t r = 0; r < packed.size(); ++r) {
    rc = unpack(scratch, packed[r], g.block_bytes[r], byte_address(recvbuf, g.block_offsets[r]), g.block_counts[r],
                recvtype, comm);
    if (rc != MPI_SUCCESS) return raise_mpi_on(comm, entry, rc);
  }
  return MPI_SUCCESS;
}

// Block sizes from the receive side, which every rank describes alike;
// displs == nullptr: MPI_Allgather's equal, consecutive blocks.
template <class Count, class Displ>
Reason plan_gathering(MPI_Comm comm, const Count* counts, Count equal_count, const Displ* displs,
                      MPI_Datatype recvtype, Gathering* g) {
  int size = 0;
  MPI_Count type_size = 0;
  MPI_Aint lb = 0;
  MPI_Aint extent = 0;
  if (recvtype == MPI_DATATYPE_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS ||
      PMPI_Type_size_x(recvtype, &type_size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(recvtype, &lb, &extent) != MPI_SUCCESS) {
    return Reason::kInvalidArgument;
  }
  if (type_size < 0) return Reason::kTooLarge;  // MPI_UNDEFINED: more bytes than MPI counts
  for (int r = 0; r < size; ++r) {
    const Count count = counts != nullptr ? counts[r] : equal_count;
    if (count < 0) return Reason::kInvalidArgument;
    const MPI_Aint first = displs != nullptr ? static_cast<MPI_Aint>(displs[r]) : static_cast<MPI_Aint>(count) * r;
    g->block_counts.push_back(static_cast<MPI_Aint>(count));
    g->block_bytes.push_back(static_cast<size_t>(count) * static_cast<size_t>(type_size));
    g->block_offsets.push_back(first * extent);
    g->total += g->block_bytes.back();
  }
  return Reason::kServed;
}

// recvcounts and displs null: MPI_Allgather's recvcount for every block.
template <class Count, class Displ, class Fallback>
int allgatherv(Entry entry, const char* name, bool variable, const void* sendbuf, Count sendcount, MPI_Datatype sendtype,
               void* recvbuf, const Count* recvcounts, Count recvcount, const Displ* displs, MPI_Datatype recvtype,
               MPI_Comm comm, Fallback&& pmpi) {
  Reason reason = route_before_arguments(comm);
  Gathering g;
  CommState* state = nullptr;
  if (reason == Reason::kServed && variable && (recvcounts == nullptr || displs == nullptr)) {
    reason = Reason::kInvalidArgument;
  }
  if (reason == Reason::kServed && sendbuf != MPI_IN_PLACE && (sendcount < 0 || sendtype == MPI_DATATYPE_NULL)) {
    reason = Reason::kInvalidArgument;
  }
  if (reason == Reason::kServed) reason = plan_gathering(comm, recvcounts, recvcount, displs, recvtype, &g);
  if (reason == Reason::kServed && g.total > kMaxMovedBytes) reason = Reason::kTooLarge;
  if (reason == Reason::kServed) reason = route_to_state(comm, kOnlyMpiAlgorithm, g.total, &state, !variable);
  if (reason == Reason::kServed && state->inter && (sendbuf == MPI_IN_PLACE || sendcount > INT_MAX || recvcount > INT_MAX)) {
    reason = sendbuf == MPI_IN_PLACE ? Reason::kInvalidArgument : Reason::kIntercomm;
  }
  count_call(entry, reason, g.total);
  if (reason != Reason::kServed) return pmpi();
  if (state->inter) {
    return inter_allgather(*state, comm, sendbuf, static_cast<int>(sendcount), sendtype, recvbuf,
                           static_cast<int>(recvcount), recvtype);
  }
  return gather_blocks(*state, name, comm, sendbuf, static_cast<MPI_Aint>(sendcount), sendtype, recvbuf, recvtype, g);
}

}  // namespace

}  // namespace matexinterpose

using namespace matexinterpose;

extern "C" {

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Bcast", [&] {
    return bcast(Entry::kBcast, buffer, count, type, root, comm,
               [&] { return PMPI_Bcast(buffer, count, type, root, comm); });
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Allgather", [&] {
    return allgatherv(Entry::kAllgather, "MPI_Allgather", false, sendbuf, sendcount, sendtype, recvbuf,
                    static_cast<const int*>(nullptr), recvcount, static_cast<const int*>(nullptr), recvtype, comm,
                    [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
  });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Allgatherv", [&] {
    return allgatherv(Entry::kAllgatherv, "MPI_Allgatherv", true, sendbuf, sendcount, sendtype, recvbuf, recvcounts, 0,
                    displs, recvtype, comm, [&] {
                      return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                             comm);
                    });
  });
}

#if MPI_VERSION >= 4
int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Bcast_c", [&] {
    return bcast(Entry::kLargeCount, buffer, count, type, root, comm,
               [&] { return PMPI_Bcast_c(buffer, count, type, root, comm); });
  });
}

int MPI_Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Allgather_c", [&] {
    return allgatherv(Entry::kLargeCount, "MPI_Allgather_c", false, sendbuf, sendcount, sendtype, recvbuf,
                    static_cast<const MPI_Count*>(nullptr), recvcount, static_cast<const MPI_Aint*>(nullptr),
                    recvtype, comm, [&] {
                      return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
                    });
  });
}

int MPI_Allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return without_exceptions(comm, "MPI_Allgatherv_c", [&] {
    return allgatherv(Entry::kLargeCount, "MPI_Allgatherv_c", true, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                    MPI_Count{0}, displs, recvtype, comm, [&] {
                      return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                               comm);
                    });
  });
}
#endif

}  // extern "C"
