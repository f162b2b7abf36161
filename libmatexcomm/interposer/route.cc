#include "route.h"

#include <cstring>

#include "interposer_settings.h"

namespace matexinterpose {

Reason route_before_arguments(MPI_Comm comm) {
  if (finalizing()) return Reason::kAfterFinalize;
  install_finalize_hook(false);  // where MPI_Init was not ours to wrap (a no-op once installed)
  if (settings().mode == Mode::kOff) return Reason::kInactive;
  if (comm == MPI_COMM_NULL) return Reason::kInvalidArgument;
  return Reason::kServed;
}

Reason route_to_state(MPI_Comm comm, int coll, size_t bytes, CommState** state, bool inter_served) {
  const Settings& configured = settings();
  const bool automatic = configured.mode == Mode::kAuto;
  if (automatic && coll == kOnlyMpiAlgorithm) return Reason::kMpiChoice;
  if (automatic && bytes < configured.min_bytes) return Reason::kBelowFloor;
  CommState* found = known_state_of(comm);
  if (found == nullptr) {
    // Not built yet: an intercommunicator that will not be served needs none.
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return Reason::kInvalidArgument;
    if (inter && (automatic || !inter_served)) return Reason::kIntercomm;
    found = state_of(comm);
  }
  if (found == nullptr) return Reason::kInvalidArgument;
  if (found->inter) {
    // libmatexcomm has no algorithm between two groups: auto leaves them to
    // MPI, and `all` serves them in phases where the entry point can.
    if (automatic || !inter_served || found->groups.local == MPI_COMM_NULL) return Reason::kIntercomm;
    *state = found;
    return Reason::kServed;
  }
  if (found->comm == nullptr) return Reason::kNoState;
  if (automatic) {
    CommState::AutoAnswer& answer = found->auto_answer[coll];
    if (answer.bytes != bytes) {
      const char* algorithm = nullptr;
      answer.runs_mpi = matex_auto_algorithm(found->comm, static_cast<matex_collective_t>(coll), bytes, &algorithm) !=
                            MATEX_SUCCESS || std::strcmp(algorithm, "flat") == 0;
      answer.bytes = bytes;
    }
    if (answer.runs_mpi) return Reason::kMpiChoice;
  }
  *state = found;
  return Reason::kServed;
}

}  // namespace matexinterpose
