// communicator_p2p.cc - point-to-point sends and receives on the
// communicator's private p2p duplicate. Nothing here touches the state the
// collectives use, so any thread may call these while another runs a
// collective (MPI_THREAD_MULTIPLE required, checked on every call).
#include <string>

#include "comm/argument_checks.h"
#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

void require_thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  MATEX_REQUIRE(provided >= MPI_THREAD_MULTIPLE, MATEX_ERR_UNSUPPORTED,
                "point-to-point calls need MPI_THREAD_MULTIPLE, but MPI was initialized with a lower thread level "
                "(initialize it with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or let matex_init do it)");
}

void require_peer(int peer, int size, const char* argument, bool any_allowed) {
  if (any_allowed && peer == MATEX_ANY_SOURCE) return;
  MATEX_REQUIRE(peer >= 0 && peer < size, MATEX_ERR_INVALID_ARG,
                std::string(argument) + " = " + std::to_string(peer) + " is not a rank of this communicator (size " +
                    std::to_string(size) + (any_allowed ? "; or MATEX_ANY_SOURCE)" : ")"));
}

void require_tag(int tag) {
  int* upper = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
  const int limit = found && upper != nullptr ? *upper : 32767;
  MATEX_REQUIRE(tag >= 0 && tag <= limit, MATEX_ERR_INVALID_ARG,
                "tag = " + std::to_string(tag) + " is outside 0.." + std::to_string(limit) + " (MPI_TAG_UB)");
}

}  // namespace

std::unique_ptr<P2pRequest> Communicator::isend(const void* buf, size_t count, matex_dtype_t dtype, int dest,
                                                int tag) const {
  require_dtype(dtype, "dtype");
  require_peer(dest, layout_.world_size, "dest", false);
  require_tag(tag);
  require_buffer(buf, count, "buf");
  require_int_count(count, "count");
  MATEX_REQUIRE(!is_device_memory(buf), MATEX_ERR_UNSUPPORTED, "matex_isend takes host buffers only in this release");
  require_thread_multiple();
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Isend(buf, static_cast<int>(count), MpiReductions::datatype(dtype), dest, tag, p2p_.get(), &request),
            "MPI_Isend");
  return std::make_unique<P2pRequest>(P2pRequest::Kind::kSend, request, dest, tag, count, dtype, pace_);
}

std::unique_ptr<P2pRequest> Communicator::irecv(void* buf, size_t count, matex_dtype_t dtype, int source,
                                                int tag) const {
  require_dtype(dtype, "dtype");
  require_peer(source, layout_.world_size, "source", true);
  require_tag(tag);
  require_buffer(buf, count, "buf");
  require_int_count(count, "count");
  MATEX_REQUIRE(!is_device_memory(buf), MATEX_ERR_UNSUPPORTED, "matex_irecv takes host buffers only in this release");
  require_thread_multiple();
  const int mpi_source = source == MATEX_ANY_SOURCE ? MPI_ANY_SOURCE : source;
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Irecv(buf, static_cast<int>(count), MpiReductions::datatype(dtype), mpi_source, tag, p2p_.get(),
                      &request),
            "MPI_Irecv");
  return std::make_unique<P2pRequest>(P2pRequest::Kind::kReceive, request, mpi_source, tag, count, dtype, pace_);
}

}  // namespace matexcomm
