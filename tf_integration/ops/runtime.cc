// runtime.cc - see runtime.h.
#include "runtime.h"

#include <mpi.h>

#include <map>
#include <mutex>
#include <string>

namespace {

// A process set's communicator and engine, on its member ranks.
struct ProcessSet {
  matex_comm_t comm = nullptr;
  matex_engine_t engine = nullptr;
  int size = 0;
};

struct Runtime {
  std::mutex mutex;
  matex_comm_t comm = nullptr;
  matex_engine_t engine = nullptr;
  std::map<int64_t, ProcessSet> sets;  // by process_set_id (> 0)
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

absl::Status running_engine(int64_t process_set_id, matex_engine_t* engine, int* size) {
  if (process_set_id == 0) {
    absl::Status running = running_engine(engine);
    if (size != nullptr) *size = runtime().size;
    return running;
  }
  Runtime& r = runtime();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.sets.find(process_set_id);
  if (found == r.sets.end() || r.shut_down) {
    *engine = nullptr;
    return absl::FailedPreconditionError("matex: process set " + std::to_string(process_set_id) +
                                         " is not registered on rank " + std::to_string(r.rank) +
                                         " (not one of its ranks, or removed)");
  }
  *engine = found->second.engine;
  if (size != nullptr) *size = found->second.size;
  return absl::OkStatus();
}

}  // namespace matex_tf

namespace {

// Stops a set's engine and frees its communicator: collective over its ranks.
int close_set(Runtime& r, ProcessSet& set) {
  int status = 0;
  if (set.engine != nullptr && matex_engine_destroy(&set.engine) != MATEX_SUCCESS) {
    status = fail(r, "stopping a process set's engine");
  }
  if (set.comm != nullptr && matex_finalize(&set.comm) != MATEX_SUCCESS) {
    status = fail(r, "freeing a process set's communicator");
  }
  return status;
}

}  // namespace

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
  for (auto& [id, set] : r.sets) {  // in registration order (ids grow), as every member registered them
    if (close_set(r, set) != 0) status = 1;
  }
  r.sets.clear();
  if (r.engine != nullptr && matex_engine_destroy(&r.engine) != MATEX_SUCCESS) status = fail(r, "matex_engine_destroy");
  if (matex_finalize(&r.comm) != MATEX_SUCCESS) status = fail(r, "matex_finalize");
  return status;
}

int matex_tf_add_process_set(int id, const int* ranks, int n) {
  Runtime& r = runtime();
  matex_comm_t parent = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.comm == nullptr || r.shut_down) {
      r.error = "matex is not initialized (or was shut down): no process set can be added";
      return 1;
    }
    if (id <= 0 || r.sets.count(id) != 0) {
      r.error = "process set id " + std::to_string(id) + " is taken or not > 0";
      return 1;
    }
    parent = r.comm;
  }
  // The collective part runs unlocked: kernels on this rank must go on reaching the engines meanwhile.
  ProcessSet set;
  set.size = n;
  if (matex_comm_create_from_ranks(parent, ranks, n, &set.comm) != MATEX_SUCCESS) {
    return fail(r, "making process set " + std::to_string(id) + "'s communicator");
  }
  if (matex_engine_create(set.comm, &set.engine) != MATEX_SUCCESS) {
    const int status = fail(r, "starting process set " + std::to_string(id) + "'s engine");
    matex_finalize(&set.comm);
    return status;
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  r.sets.emplace(id, set);
  return 0;
}

int matex_tf_remove_process_set(int id) {
  Runtime& r = runtime();
  ProcessSet set;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.sets.find(id);
    if (found == r.sets.end()) {
      r.error = "process set " + std::to_string(id) + " is not registered on this rank";
      return 1;
    }
    set = found->second;
    r.sets.erase(found);
  }
  return close_set(r, set);
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
