// bench_preamble.h - the '#' lines matex-bench prints before its table:
// versions, the command line, the rank -> node layout, the effective MATEX_*
// configuration, the memcpy yardstick, the latency between ranks 0 and 1 and, with --mem cuda, the GPU, stream
// and MPI baseline.
#pragma once

#include <string>
#include <vector>

#include "bench_options.h"
#include "matexcomm/matexcomm.hpp"

namespace matexbench {

struct Layout {
  int world_size = 1;
  std::vector<std::vector<int>> ranks_by_node;  // node index -> world ranks
  int node_count() const { return static_cast<int>(ranks_by_node.size()); }
  std::string sizes() const;  // local sizes, "2,2"
};

// Collective: every rank learns every rank's node index.
Layout gather_layout(const matex::Communicator& comm);

// First line of MPI_Get_library_version.
std::string mpi_library_version();

// "NAME=value (default|env)" lines of Config::from_environment(), or one
// line with the error for a bad MATEX_* variable.
std::vector<std::string> config_lines();

// `memory_lines` (with their "# "): the device buffers' description, after the iterations.
// `latency_us`: ranks 0 <-> 1 (rank_latency.h); negative: no line.
std::vector<std::string> preamble_lines(const Options& options, const Layout& layout, double memcpy_gbps,
                                        double latency_us, const std::vector<std::string>& memory_lines = {});

}  // namespace matexbench
