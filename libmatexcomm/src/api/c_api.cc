// c_api.cc - the extern "C" surface. Every entry point runs inside guarded(),
// which turns any exception into a status code plus a thread-local message, so
// no exception crosses the C boundary. Handles are checked against the set of
// live communicators before use, so a finalized or garbage handle is an error,
// not a crash.
#include <mpi.h>

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>

#include "api/c_api_support.h"
#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "matexcomm/matexcomm.h"
#include "matexcomm/matexcomm_mpi.h"

// A handle is a shell that outlives its communicator: matex_finalize destroys
// the communicator but keeps the shell (a few bytes), so a stale copy of a
// finalized handle can never alias a newer communicator at the same address.
struct matex_comm_s {
  std::unique_ptr<matexcomm::Communicator> impl;
  // False for matex_init_mpi's communicators: they live on a caller's MPI
  // (the MPI interposer's among them), so finalizing them never ends MPI.
  bool counts_for_mpi = true;
};

namespace matexcomm::capi {
thread_local std::string g_last_error;
}  // namespace matexcomm::capi

using matexcomm::capi::g_last_error;
using matexcomm::capi::guarded;

namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_set<matex_comm_t> shells;  // every handle ever handed out
  int live = 0;  // shells whose communicator exists, of those that count for MPI's lifetime
  bool we_initialized_mpi = false;
};

// Never destroyed, so the shells it holds stay reachable until the process ends.
Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

}  // namespace

namespace matexcomm::capi {

matexcomm::Communicator& live_comm(matex_comm_t comm) {
  if (comm == nullptr) {
    MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "comm is NULL: call matex_init first");
  }
  // Shells are never freed, so a pointer once found in the registry stays a
  // shell: the thread remembers the last one and skips the locked lookup.
  thread_local matex_comm_t known_shell = nullptr;
  if (comm != known_shell) {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    if (reg.shells.count(comm) == 0) {
      MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "comm is not a live communicator (never initialized by matex_init)");
    }
    known_shell = comm;
  }
  if (!comm->impl) MATEX_RAISE(MATEX_ERR_NOT_INITIALIZED, "comm is not a live communicator (already finalized)");
  return *comm->impl;
}

void require_out(const void* pointer, const char* argument) {
  MATEX_REQUIRE(pointer != nullptr, MATEX_ERR_INVALID_ARG, std::string(argument) + " is NULL");
}

matex_comm_t register_communicator(std::unique_ptr<matexcomm::Communicator> impl, bool counts_for_mpi) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto shell = new matex_comm_s{std::move(impl), counts_for_mpi};
  reg.shells.insert(shell);
  if (counts_for_mpi) ++reg.live;
  return shell;
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
      registry().we_initialized_mpi = true;
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
    Registry& reg = registry();
    std::unique_ptr<matexcomm::Communicator> owned;
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(reg.mutex);
      owned = std::move((*comm)->impl);  // the shell stays registered, now dead
      last = (*comm)->counts_for_mpi && --reg.live == 0;
    }
    *comm = nullptr;
    owned.reset();
    if (last && reg.we_initialized_mpi) {
      reg.we_initialized_mpi = false;
      MPI_Finalize();
    }
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
