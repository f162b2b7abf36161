// runtime.cc - see runtime.h.
#include "runtime.h"

#include <mpi.h>

#include <mutex>
#include <string>

namespace {

struct Runtime {
  std::mutex mutex;
  matex_comm_t comm = nullptr;
  matex_engine_t engine = nullptr;
  bool shut_down = false;
  int rank = 0;
  int size = 1;
  std::string error;
};

Runtime& runtime() {
  static Runtime* instance = new Runtime;  // never destroyed: kernels may still ask during teardown
  return *instance;
}

int fail(Runtime& r, const std::string& what) {
  r.error = what + ": " + matex_last_error();
  return 1;
}

}  // namespace

namespace matex_tf {

absl::Status running_engine(matex_engine_t* engine) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  *engine = r.engine;
  if (r.engine != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      r.shut_down ? "matex has been shut down (matex.shutdown() or interpreter exit)"
                  : "matex is not initialized: call matex.init() first, or run the script with MATEX_ENABLE=1");
}

}  // namespace matex_tf

extern "C" {

int matex_tf_initialize(void) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.engine != nullptr) return 0;
  if (r.shut_down) {
    r.error = "matex was shut down in this process and cannot start again (MPI cannot be re-initialized)";
    return 1;
  }
  if (matex_init(&r.comm) != MATEX_SUCCESS) return fail(r, "matex_init");
  if (matex_comm_rank(r.comm, &r.rank) != MATEX_SUCCESS) return fail(r, "matex_comm_rank");
  if (matex_comm_size(r.comm, &r.size) != MATEX_SUCCESS) return fail(r, "matex_comm_size");
  if (matex_engine_create(r.comm, &r.engine) != MATEX_SUCCESS) return fail(r, "matex_engine_create");
  return 0;
}

int matex_tf_shutdown(void) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.shut_down || r.comm == nullptr) return 0;
  r.shut_down = true;
  int status = 0;
  if (r.engine != nullptr && matex_engine_destroy(&r.engine) != MATEX_SUCCESS) status = fail(r, "matex_engine_destroy");
  if (matex_finalize(&r.comm) != MATEX_SUCCESS) status = fail(r, "matex_finalize");
  return status;
}

int matex_tf_rank(void) { return runtime().rank; }
void matex_tf_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
int matex_tf_size(void) { return runtime().size; }
const char* matex_tf_last_error(void) { return runtime().error.c_str(); }
int matex_tf_topology(int* local_rank, int* local_size, int* node_index, int* node_count) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.comm == nullptr || r.shut_down) {
    r.error = "matex is not initialized (or was shut down): no topology to report";
    return 1;
  }
  if (matex_comm_local_rank(r.comm, local_rank) != MATEX_SUCCESS) return fail(r, "matex_comm_local_rank");
  if (matex_comm_local_size(r.comm, local_size) != MATEX_SUCCESS) return fail(r, "matex_comm_local_size");
  if (matex_comm_node_index(r.comm, node_index) != MATEX_SUCCESS) return fail(r, "matex_comm_node_index");
  if (matex_comm_node_count(r.comm, node_count) != MATEX_SUCCESS) return fail(r, "matex_comm_node_count");
  return 0;
}
// Blocking: Horovod's join (matex_engine_submit_join); *last_rank: the rank that joined last.
int matex_tf_join(int* last_rank) {
  Runtime& r = runtime();
  matex_engine_t engine = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.engine == nullptr) {
      r.error = "matex is not initialized (or was shut down): nothing to join";
      return 1;
    }
    engine = r.engine;
  }
  matex_request_t request = nullptr;
  if (matex_engine_submit_join(engine, &request) != MATEX_SUCCESS) return fail(r, "join");
  int status = 0;
  const void* data = nullptr;
  size_t rows = 0;
  if (matex_request_wait(request) != MATEX_SUCCESS) {
    status = fail(r, "join");
  } else if (matex_request_output(request, &data, &rows) != MATEX_SUCCESS || rows != 1) {
    status = fail(r, "join's result");
  } else {
    *last_rank = *static_cast<const int32_t*>(data);
  }
  matex_request_free(&request);
  return status;
}
int matex_tf_thread_budget(matex_thread_budget_t* budget, int* cpus, size_t cpus_capacity, char* table,
                           size_t table_capacity) {
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.comm == nullptr) {
    r.error = "matex is not initialized";
    return 1;
  }
  if (matex_thread_budget(r.comm, budget, cpus, cpus_capacity, table, table_capacity) != MATEX_SUCCESS) {
    return fail(r, "matex_thread_budget");
  }
  return 0;
}

}  // extern "C"
