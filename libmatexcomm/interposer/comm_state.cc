#include "comm_state.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "call_report.h"
#include "interposer_settings.h"
#include "matexcomm/matexcomm_mpi.h"

namespace matexinterpose {

namespace {

std::mutex g_mutex;                  // guards the two below and keyval creation
std::set<MPI_Comm>* g_live = nullptr;  // communicators holding a state (never destroyed: used at exit)
int g_state_keyval = MPI_KEYVAL_INVALID;
int g_finalize_keyval = MPI_KEYVAL_INVALID;
std::atomic<bool> g_finalizing{false};
bool g_hook_from_init = false;

// An intercommunicator is cached too, as a state that is never served, so
// that the test runs once.
struct Slot {
  CommState state;
  bool intercomm = false;
};

int delete_state(MPI_Comm comm, int /*keyval*/, void* value, void* /*extra*/) {
  auto* slot = static_cast<Slot*>(value);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_live != nullptr) g_live->erase(comm);
  }
  if (slot->state.comm != nullptr) matex_finalize(&slot->state.comm);
  delete slot;
  return MPI_SUCCESS;
}

int run_finalize_hook(MPI_Comm /*self*/, int /*keyval*/, void* /*value*/, void* /*extra*/) {
  g_finalizing.store(true);
  if (settings().report) print_report(g_hook_from_init);
  // Every state still alive (MPI_COMM_WORLD's, and those of communicators the
  // program never freed) goes now, while MPI still works.
  for (;;) {
    MPI_Comm comm = MPI_COMM_NULL;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (g_live == nullptr || g_live->empty()) break;
      comm = *g_live->begin();
    }
    if (PMPI_Comm_delete_attr(comm, g_state_keyval) != MPI_SUCCESS) {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_live->erase(comm);  // never loop on a communicator MPI no longer knows
    }
  }
  PMPI_Comm_free_keyval(&g_state_keyval);
  return MPI_SUCCESS;
}

int state_keyval() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state_keyval == MPI_KEYVAL_INVALID) {
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_state_keyval, nullptr);
    g_live = new std::set<MPI_Comm>;
  }
  return g_state_keyval;
}

// Collective over comm: libmatexcomm over an attribute-free private copy
// (MPI_Comm_split copies no attributes, so the program's copy callbacks never
// see it), agreed on by every rank.
CommState build_state(MPI_Comm comm) {
  CommState state;
  PMPI_Comm_rank(comm, &state.rank);
  PMPI_Comm_size(comm, &state.size);
  MPI_Comm copy = MPI_COMM_NULL;
  std::string failure;
  if (PMPI_Comm_split(comm, 0, state.rank, &copy) != MPI_SUCCESS) {
    std::fprintf(stderr, "matex interposer: rank %d: MPI_Comm_split failed; libmatexcomm serves nothing on "
                         "this communicator\n", state.rank);
    return state;
  }
  PMPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN);
  matex_comm_t created = nullptr;
  if (matex_init_mpi(copy, &created) != MATEX_SUCCESS) failure = matex_last_error();
  int ok = failure.empty() ? 1 : 0;
  int everywhere = 0;
  if (PMPI_Allreduce(&ok, &everywhere, 1, MPI_INT, MPI_MIN, copy) != MPI_SUCCESS) everywhere = 0;
  PMPI_Comm_free(&copy);
  if (everywhere == 1) {
    state.comm = created;
    return state;
  }
  if (created != nullptr) matex_finalize(&created);
  if (!failure.empty()) {
    std::fprintf(stderr, "matex interposer: rank %d: libmatexcomm serves nothing on a communicator of %d ranks, "
                         "MPI runs its collectives: %s\n", state.rank, state.size, failure.c_str());
  }
  return state;
}

}  // namespace

CommState* state_of(MPI_Comm comm) {
  const int keyval = state_keyval();
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) {
    auto* slot = static_cast<Slot*>(value);
    return slot->intercomm ? nullptr : &slot->state;
  }
  install_finalize_hook(false);
  auto* slot = new Slot;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  slot->intercomm = inter != 0;
  if (!slot->intercomm) slot->state = build_state(comm);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live->insert(comm);
  }
  PMPI_Comm_set_attr(comm, keyval, slot);
  return slot->intercomm ? nullptr : &slot->state;
}

void install_finalize_hook(bool from_init) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_finalize_keyval != MPI_KEYVAL_INVALID) return;
  g_hook_from_init = from_init;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, run_finalize_hook, &g_finalize_keyval, nullptr);
  PMPI_Comm_set_attr(MPI_COMM_SELF, g_finalize_keyval, nullptr);
}

bool finalizing() { return g_finalizing.load(std::memory_order_relaxed); }

}  // namespace matexinterpose
