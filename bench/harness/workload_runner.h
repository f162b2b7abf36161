// workload_runner.h - matex-bench --workload: steps of many named tensors
// through the engine, against one allreduce of the same bytes.
//
// A step fills the inputs (untimed), then, after a barrier, submits every
// tensor on its own in the workload's order and waits for all. Steps and
// single allreduces alternate, so both see the same machine state. Inputs are
// small integers that change every step; the last step's results are checked
// (before that step's single allreduce overwrites them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "matexcomm/matexcomm.h"

namespace matexbench {

struct WorkloadTensor {
  std::string name;
  size_t count = 0;  // float32 elements
};

// The tensors of one step, in submission order; empty for an unknown name.
std::vector<WorkloadTensor> workload_tensors(const std::string& workload);

struct WorkloadResult {
  size_t tensors = 0;
  size_t elements = 0;
  double step_us = 0;              // mean over steps of the slowest rank
  double single_allreduce_us = 0;  // likewise, one allreduce of all elements
  double ratio = 0;                // step_us / single_allreduce_us
  double tensors_per_second = 0;
  // Median idle cycle in a quiet 0.3 s window after the steps, on the rank
  // that arrived last (the protocol's own cost) and on the one that arrived
  // first (it also waits for the other's timer to wake it).
  double idle_coordination_us = 0;
  double idle_coordination_max_us = 0;
  uint64_t cached_cycles = 0;
  uint64_t full_cycles = 0;
  uint64_t fused_responses = 0;
  uint64_t wrong = 0;  // over all ranks
};

WorkloadResult run_workload(matex_comm_t comm, const std::vector<WorkloadTensor>& tensors, int steps,
                            int warmup_steps, bool check);

}  // namespace matexbench
