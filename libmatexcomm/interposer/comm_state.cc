#include "comm_state.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <vector>

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
// Bumped whenever a state is deleted, so that a thread's memory of the last
// communicator it used can never outlive that communicator's state (a freed
// handle may come back for a new communicator).
std::atomic<uint64_t> g_generation{0};

struct Recent {
  MPI_Comm comm = MPI_COMM_NULL;
  CommState* state = nullptr;
  uint64_t generation = 0;
};
// initial-exec: the hot path reads it with no call into the dynamic linker.
// The library must be preloaded or linked (docs/mpi-interposer.md): a late
// dlopen needs glibc's spare static TLS, which may be used up.
thread_local Recent t_recent __attribute__((tls_model("initial-exec")));
bool g_hook_from_init = false;

struct Slot {
  CommState state;
};

int delete_state(MPI_Comm comm, int /*keyval*/, void* value, void* /*extra*/) {
  auto* slot = static_cast<Slot*>(value);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_live != nullptr) g_live->erase(comm);
  }
  if (slot->state.comm != nullptr) matex_finalize(&slot->state.comm);
  // An intercommunicator's groups: freeing `local` deletes its own state.
  if (slot->state.groups.local != MPI_COMM_NULL) PMPI_Comm_free(&slot->state.groups.local);
  if (slot->state.groups.merged != MPI_COMM_NULL) PMPI_Comm_free(&slot->state.groups.merged);
  delete slot;
  return MPI_SUCCESS;
}

int run_finalize_hook(MPI_Comm /*self*/, int /*keyval*/, void* /*value*/, void* /*extra*/) {
  g_finalizing.store(true);
  if (g_hook_from_init) {
    // Every rank installed the hook in MPI_Init, so all of them are here:
    // agree on printing, so that a rank whose setting differs never leaves the
    // others in the report's reduction.
    int mine = settings().report ? 1 : 0;
    int any = 0;
    PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) print_report(true);
  } else if (settings().report) {
    print_report(false);
  }
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
  // Never created when no call needed a state (MATEX_INTERPOSE=off, no collectives).
  if (g_state_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g_state_keyval);
  return MPI_SUCCESS;
}

// Created once; read on every call without the lock (it never changes after
// creation until MPI_Finalize frees it, after which no call reaches here).
int state_keyval() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(g_mutex);
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_state_keyval, nullptr);
    g_live = new std::set<MPI_Comm>;
  });
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
  const bool aside = settings().stand_aside;
  if (!aside && matex_init_mpi(copy, &created) != MATEX_SUCCESS) failure = matex_last_error();
  int ok = failure.empty() && !aside ? 1 : 0;
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

// Lowest MPI_COMM_WORLD rank of a group, or -1 when some member is not in
// this process's world (spawned processes): both groups then see -1.
int lowest_world_rank(MPI_Group group) {
  MPI_Group world = MPI_GROUP_NULL;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int size = 0;
  PMPI_Group_size(group, &size);
  std::vector<int> ranks(size);
  std::vector<int> in_world(size);
  for (int i = 0; i < size; ++i) ranks[i] = i;
  PMPI_Group_translate_ranks(group, size, ranks.data(), world, in_world.data());
  PMPI_Group_free(&world);
  int lowest = -1;
  for (int r : in_world) {
    if (r == MPI_UNDEFINED) return -1;
    if (lowest < 0 || r < lowest) lowest = r;
  }
  return lowest;
}

// Collective over both groups: the merged intracommunicator (the group with
// the lower world ranks first) and this group's own, split from it.
CommState build_inter_state(MPI_Comm comm) {
  CommState state;
  state.inter = true;
  PMPI_Comm_rank(comm, &state.rank);
  PMPI_Comm_size(comm, &state.size);
  PMPI_Comm_remote_size(comm, &state.groups.remote_size);
  MPI_Group local = MPI_GROUP_NULL;
  MPI_Group remote = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &local);
  PMPI_Comm_remote_group(comm, &remote);
  const int local_lowest = lowest_world_rank(local);
  const int remote_lowest = lowest_world_rank(remote);
  PMPI_Group_free(&local);
  PMPI_Group_free(&remote);
  if (local_lowest < 0 || remote_lowest < 0) return state;  // not one world: MPI serves it
  const int high = local_lowest > remote_lowest ? 1 : 0;
  if (PMPI_Intercomm_merge(comm, high, &state.groups.merged) != MPI_SUCCESS) return state;
  PMPI_Comm_set_errhandler(state.groups.merged, MPI_ERRORS_RETURN);
  state.groups.remote_offset = high ? 0 : state.size;
  if (PMPI_Comm_split(state.groups.merged, high, state.rank, &state.groups.local) != MPI_SUCCESS) {
    state.groups.local = MPI_COMM_NULL;
    return state;
  }
  PMPI_Comm_set_errhandler(state.groups.local, MPI_ERRORS_RETURN);
  return state;
}

}  // namespace

CommState* known_state_of(MPI_Comm comm) {
  // The same communicator as this thread's last call, with no state deleted
  // since: skip MPI's attribute lookup (a lock and a hash) on the hot path.
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (comm == t_recent.comm && generation == t_recent.generation) return t_recent.state;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, state_keyval(), &value, &found) != MPI_SUCCESS || !found) return nullptr;
  t_recent = {comm, &static_cast<Slot*>(value)->state, generation};
  return t_recent.state;
}

CommState* state_of(MPI_Comm comm) {
  if (CommState* known = known_state_of(comm)) return known;
  const int keyval = state_keyval();
  auto* slot = new Slot;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  slot->state = inter ? build_inter_state(comm) : build_state(comm);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live->insert(comm);
  }
  PMPI_Comm_set_attr(comm, keyval, slot);
  return &slot->state;
}

void install_finalize_hook(bool from_init) {
  static std::atomic<bool> installed{false};
  if (installed.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_finalize_keyval != MPI_KEYVAL_INVALID) return;
  g_hook_from_init = from_init;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, run_finalize_hook, &g_finalize_keyval, nullptr);
  PMPI_Comm_set_attr(MPI_COMM_SELF, g_finalize_keyval, nullptr);
  installed.store(true, std::memory_order_release);
}

bool finalizing() { return g_finalizing.load(std::memory_order_relaxed); }

}  // namespace matexinterpose
