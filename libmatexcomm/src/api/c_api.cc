// c_api.cc - the extern "C" surface. Every entry point runs inside guarded(),
// which turns any exception into a status code plus a thread-local message, so
// no exception crosses the C boundary. Handles are checked against the
// registry of live communicators before use (api/handle_registry.h), so a
// finalized or garbage handle is an error, not a crash.
#include <mpi.h>

#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "api/c_api_support.h"
#include "api/handle_registry.h"
#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "matexcomm/matexcomm.h"
#include "matexcomm/matexcomm_mpi.h"

namespace matexcomm::capi {
thread_local std::string g_last_error;
}  // namespace matexcomm::capi

using matexcomm::capi::g_last_error;
using matexcomm::capi::guarded;

namespace {

// What a communicator handle stands for.
struct CommEntry {
  std::unique_ptr<matexcomm::Communicator> impl;
  // False for matex_init_mpi's communicators: they live on a caller's MPI
  // (the MPI interposer's among them), so finalizing them never ends MPI.
  bool counts_for_mpi = true;
};
using CommRegistry = matexcomm::capi::HandleRegistry<matex_comm_t, CommEntry, 1>;

// Whether finalizing the last communicator ends MPI. Never destroyed.
struct MpiLifetime {
  std::mutex mutex;
  int live = 0;  // live communicators that count for MPI's lifetime
  bool we_initialized_mpi = false;
};
MpiLifetime& mpi_lifetime() {
  static MpiLifetime* instance = new MpiLifetime;
  return *instance;
}

}  // namespace

namespace matexcomm::capi {

matexcomm::Communicator& live_comm(matex_comm_t comm) {
  if (comm == nullptr) {
    MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "comm is NULL: call matex_init first");
  }
  CommRegistry::State state;
  const CommEntry* entry = CommRegistry::instance().find_unowned(comm, &state);
  if (state == CommRegistry::State::kReleased) {
    MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "comm is not a live communicator (already finalized)");
  }
  if (!entry) {
    MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "comm is not a live communicator (never initialized by matex_init)");
  }
  return *entry->impl;
}

void require_out(const void* pointer, const char* argument) {
  MATEX_REQUIRE(pointer != nullptr, MATEX_ERR_INVALID_ARG, std::string(argument) + " is NULL");
}

matex_comm_t register_communicator(std::unique_ptr<matexcomm::Communicator> impl, bool counts_for_mpi) {
  const matex_comm_t handle =
      CommRegistry::instance().add(std::make_shared<CommEntry>(CommEntry{std::move(impl), counts_for_mpi}));
  if (counts_for_mpi) {  // counted once it is registered: nothing after this can fail
    MpiLifetime& lifetime = mpi_lifetime();
    std::lock_guard<std::mutex> lock(lifetime.mutex);
    ++lifetime.live;
  }
  return handle;
}

}  // namespace matexcomm::capi

using matexcomm::capi::live_comm;
using matexcomm::capi::require_out;

namespace {

void create(MPI_Comm parent, matex_comm_t* out, bool counts_for_mpi) {
  require_out(out, "comm");
  *out = nullptr;
  *out = matexcomm::capi::register_communicator(std::make_unique<matexcomm::Communicator>(parent), counts_for_mpi);
}

matex_status_t query(matex_comm_t comm, int* out, int matexcomm::topo::Layout::*field) {
  return guarded([&] {
    require_out(out, "output pointer");
    *out = live_comm(comm).layout().*field;
  });
}

}  // namespace

extern "C" {

const char* matex_status_string(matex_status_t status) {
  switch (status) {
    case MATEX_SUCCESS: return "success";
    case MATEX_ERR_INVALID_ARG: return "invalid argument";
    case MATEX_ERR_NOT_INITIALIZED: return "not initialized";
    case MATEX_ERR_CONFIG: return "invalid configuration";
    case MATEX_ERR_MPI: return "MPI error";
    case MATEX_ERR_SYSTEM: return "system error";
    case MATEX_ERR_TIMEOUT: return "timeout";
    case MATEX_ERR_MISMATCH: return "ranks disagree";
    case MATEX_ERR_UNSUPPORTED: return "unsupported";
    case MATEX_ERR_INTERNAL: return "internal error";
    case MATEX_ERR_COMM_FAILED: return "communicator failed";
    case MATEX_ERR_DEVICE: return "CUDA or NCCL error";
  }
  return "unknown status";
}

const char* matex_last_error(void) { return g_last_error.c_str(); }

const char* matex_version_string(void) { return MATEX_VERSION_STRING; }

namespace {

// The table row of `name`, or MATEX_ERR_INVALID_ARG naming it.
const matexcomm::ConfigEntry& config_row(const char* name) {
  MATEX_REQUIRE(name != nullptr, MATEX_ERR_INVALID_ARG, "name is NULL");
  for (const matexcomm::ConfigEntry& entry : matexcomm::config_table()) {
    if (std::string(entry.name) == name) return entry;
  }
  MATEX_RAISE(MATEX_ERR_INVALID_ARG, std::string("name = \"") + name + "\" is not a MATEX_* setting "
                                                                    "(docs/configuration.md lists them)");
}

// The row of `name`, which must be of `type` (`what` names the kind).
void require_row_type(const char* name, matexcomm::ConfigType type, const char* what) {
  MATEX_REQUIRE(config_row(name).type == type, MATEX_ERR_INVALID_ARG,
                std::string("name = \"") + name + "\" is not a " + what + " setting");
}

}  // namespace

matex_status_t matex_config_get(const char* name, const char** value) {
  static thread_local std::string held;
  return guarded([&] {
    require_out(value, "value");
    config_row(name);
    held = matexcomm::Config::from_environment().raw(name);  // validates every MATEX_* variable
    *value = held.c_str();
  });
}

matex_status_t matex_config_get_bytes(const char* name, size_t* bytes) {
  return guarded([&] {
    require_out(bytes, "bytes");
    require_row_type(name, matexcomm::ConfigType::kBytes, "byte-count");
    *bytes = matexcomm::Config::from_environment().get_bytes(name);
  });
}

matex_status_t matex_config_get_bool(const char* name, int* value) {
  return guarded([&] {
    require_out(value, "value");
    require_row_type(name, matexcomm::ConfigType::kBool, "boolean");
    *value = matexcomm::Config::from_environment().get_bool(name) ? 1 : 0;
  });
}

matex_status_t matex_init(matex_comm_t* comm) {
  return guarded([&] {
    require_out(comm, "comm");
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized) MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "MPI has already been finalized; MPI cannot restart");
    if (!initialized) {
      int provided = 0;
      matexcomm::check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      mpi_lifetime().we_initialized_mpi = true;
    }
    create(MPI_COMM_WORLD, comm, true);
  });
}

matex_status_t matex_init_mpi(MPI_Comm mpi_comm, matex_comm_t* comm) {
  return guarded([&] {
    require_out(comm, "comm");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "matex_init_mpi needs MPI to be initialized first");
    MATEX_REQUIRE(mpi_comm != MPI_COMM_NULL, MATEX_ERR_INVALID_ARG, "mpi_comm is MPI_COMM_NULL");
    create(mpi_comm, comm, false);
  });
}

matex_status_t matex_finalize(matex_comm_t* comm) {
  return guarded([&] {
    require_out(comm, "comm");
    live_comm(*comm);
    // The handle is dead from here on, on every thread; the communicator ends below, outside any lock.
    std::shared_ptr<CommEntry> owned = CommRegistry::instance().release(*comm);
    *comm = nullptr;
    if (!owned) return;  // another thread finalized it first
    const bool counted = owned->counts_for_mpi;
    owned.reset();
    MpiLifetime& lifetime = mpi_lifetime();
    bool end_mpi = false;
    {
      std::lock_guard<std::mutex> lock(lifetime.mutex);
      end_mpi = counted && --lifetime.live == 0 && lifetime.we_initialized_mpi;
      if (end_mpi) lifetime.we_initialized_mpi = false;
    }
    if (end_mpi) MPI_Finalize();
  });
}

matex_status_t matex_comm_rank(matex_comm_t c, int* v) { return query(c, v, &matexcomm::topo::Layout::world_rank); }
matex_status_t matex_comm_size(matex_comm_t c, int* v) { return query(c, v, &matexcomm::topo::Layout::world_size); }
matex_status_t matex_comm_local_rank(matex_comm_t c, int* v) {
  return query(c, v, &matexcomm::topo::Layout::local_rank);
}
matex_status_t matex_comm_local_size(matex_comm_t c, int* v) {
  return query(c, v, &matexcomm::topo::Layout::local_size);
}
matex_status_t matex_comm_node_index(matex_comm_t c, int* v) {
  return query(c, v, &matexcomm::topo::Layout::node_index);
}
matex_status_t matex_comm_node_count(matex_comm_t c, int* v) {
  return query(c, v, &matexcomm::topo::Layout::node_count);
}

matex_status_t matex_set_algorithm(matex_comm_t comm, matex_collective_t coll, const char* name) {
  return guarded([&] { live_comm(comm).set_algorithm(coll, name); });
}

matex_status_t matex_last_algorithm(matex_comm_t comm, matex_collective_t coll, const char** name) {
  return guarded([&] {
    require_out(name, "name");
    *name = live_comm(comm).last_algorithm(coll);
  });
}

matex_status_t matex_auto_algorithm(matex_comm_t comm, matex_collective_t coll, size_t bytes, const char** name) {
  return guarded([&] {
    require_out(name, "name");
    *name = live_comm(comm).auto_algorithm(coll, bytes);
  });
}

matex_status_t matex_describe_selection(matex_comm_t comm, const char** text) {
  return guarded([&] {
    require_out(text, "text");
    thread_local std::string description;
    description = live_comm(comm).describe_selection();
    *text = description.c_str();
  });
}

matex_status_t matex_tuning_identity(matex_comm_t comm, const char** library, const char** host_kind,
                                     const char** layout) {
  return guarded([&] {
    require_out(library, "library");
    require_out(host_kind, "host_kind");
    require_out(layout, "layout");
    thread_local matexcomm::TuningIdentity identity;
    identity = live_comm(comm).tuning_identity();
    *library = identity.library.c_str();
    *host_kind = identity.host_kind.c_str();
    *layout = identity.layout.c_str();
  });
}

matex_status_t matex_allreduce(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                               matex_dtype_t dtype, matex_op_t op) {
  return guarded([&] { live_comm(comm).allreduce(sendbuf, recvbuf, count, dtype, op); });
}

matex_status_t matex_broadcast(matex_comm_t comm, void* buffer, size_t count, matex_dtype_t dtype, int root) {
  return guarded([&] { live_comm(comm).broadcast(buffer, count, dtype, root); });
}

matex_status_t matex_allgather(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                               matex_dtype_t dtype) {
  return guarded([&] { live_comm(comm).allgather(sendbuf, recvbuf, count, dtype); });
}

matex_status_t matex_allgatherv(matex_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                                const size_t* recvcounts, const size_t* displs, matex_dtype_t dtype) {
  return guarded([&] { live_comm(comm).allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, dtype); });
}

matex_status_t matex_reduce_scatter(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                    matex_dtype_t dtype, matex_op_t op) {
  return guarded([&] { live_comm(comm).reduce_scatter(sendbuf, recvbuf, recvcount, dtype, op); });
}

matex_status_t matex_barrier(matex_comm_t comm) {
  return guarded([&] { live_comm(comm).barrier(); });
}

matex_status_t matex_comm_set_cuda_stream(matex_comm_t comm, void* stream) {
  return guarded([&] { live_comm(comm).set_cuda_stream(stream); });
}

matex_status_t matex_comm_cuda_stream(matex_comm_t comm, void** stream) {
  return guarded([&] {
    require_out(stream, "stream");
    *stream = live_comm(comm).cuda_stream();
  });
}

int matex_built_with_cuda(void) {
#ifdef MATEX_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

size_t matex_dtype_size(matex_dtype_t dtype) { return matexcomm::dtype_size(dtype); }
const char* matex_dtype_name(matex_dtype_t dtype) { return matexcomm::dtype_name(dtype); }
const char* matex_op_name(matex_op_t op) { return matexcomm::op_name(op); }

}  // extern "C"
