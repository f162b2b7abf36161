// json_report.h - the -J FILE output of matex-bench: the run's context and one
// record per (size, dtype, op, placement), for plot_busbw.py and scripts.
#pragma once

#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_preamble.h"
#include "device_buffers.h"
#include "result_row.h"
#include "workload_runner.h"

namespace matexbench {

struct RunContext {
  const Options* options = nullptr;
  const Layout* layout = nullptr;
  double memcpy_gbps = 0.0;
  const DeviceBuffers* device = nullptr;  // --mem cuda
  const std::vector<std::string>* forced_algorithms = nullptr;  // --compare all: names of forced_time_us
  double rank_latency_us = -1.0;  // ranks 0 <-> 1 (rank_latency.h); negative: one rank
};

// Writes the JSON document; returns "" or an error naming the file.
std::string write_json_report(const std::string& path, const RunContext& context, const std::vector<ResultRow>& rows);
// The --workload document: step_us, single_allreduce_us, ratio and the engine's counters.
std::string write_workload_json(const std::string& path, const RunContext& context, const WorkloadResult& result);

}  // namespace matexbench
