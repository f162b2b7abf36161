// bench_preamble.cc - see bench_preamble.h.
#include "bench_preamble.h"

#include <mpi.h>

#include <cstdio>
#include <exception>

#include "core/config.h"

namespace matexbench {

std::string Layout::sizes() const {
  std::string text;
  for (const auto& ranks : ranks_by_node) text += (text.empty() ? "" : ",") + std::to_string(ranks.size());
  return text;
}

Layout gather_layout(const matex::Communicator& comm) {
  Layout layout;
  layout.world_size = comm.size();
  int mine = comm.node_index();
  std::vector<int> node_of(layout.world_size);
  MPI_Allgather(&mine, 1, MPI_INT, node_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
  layout.ranks_by_node.resize(comm.node_count());
  for (int rank = 0; rank < layout.world_size; ++rank) layout.ranks_by_node.at(node_of[rank]).push_back(rank);
  return layout;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  auto end = version.find_first_of(std::string("\r\n\0", 3));  // the length may count the terminator
  return end == std::string::npos ? version : version.substr(0, end);
}

std::vector<std::string> config_lines() {
  try {
    return matexcomm::Config::from_environment().describe();
  } catch (const std::exception& error) {
    return {std::string("invalid configuration: ") + error.what()};
  }
}

std::vector<std::string> preamble_lines(const Options& options, const Layout& layout, double memcpy_gbps,
                                        double latency_us, const std::vector<std::string>& memory_lines) {
  std::vector<std::string> lines;
  lines.push_back(std::string("# matex-bench: matexcomm ") + matex_version_string() + ", " + collective_name(options.coll) +
                  ", algorithm " + options.algorithm);
  lines.push_back("# MPI library: " + mpi_library_version());
  lines.push_back("# command: " + options.command_line);
  lines.push_back("# layout: " + std::to_string(layout.world_size) + (layout.world_size == 1 ? " rank" : " ranks") +
                  " on " + std::to_string(layout.node_count()) + (layout.node_count() == 1 ? " node" : " nodes") +
                  " (local sizes " + layout.sizes() + ")");
  for (int node = 0; node < layout.node_count(); ++node) {
    std::string ranks;
    for (int rank : layout.ranks_by_node[node]) ranks += " " + std::to_string(rank);
    lines.push_back("#   node " + std::to_string(node) + ": local size " +
                    std::to_string(layout.ranks_by_node[node].size()) + ", ranks" + ranks);
  }
  lines.push_back("# iterations: " + std::to_string(options.iterations) + " timed, " +
                  std::to_string(options.warmup_iterations) + " warm-up" +
                  (options.scale_iterations ? "; below 1 MiB n x min(100, 1 MiB / size) timed" : ""));
  lines.insert(lines.end(), memory_lines.begin(), memory_lines.end());
  lines.push_back("# configuration:");
  for (const std::string& line : config_lines()) lines.push_back("#   " + line);
  char memcpy_line[96];
  std::snprintf(memcpy_line, sizeof memcpy_line, "# memcpy bandwidth (1 core): %.2f GB/s", memcpy_gbps);
  lines.push_back(memcpy_line);
  if (latency_us >= 0) {
    char latency_line[96];
    std::snprintf(latency_line, sizeof latency_line, "# latency rank 0 <-> rank 1 (MPI, 8 B, half a round trip): %.2f us",
                  latency_us);
    lines.push_back(latency_line);
  }
  return lines;
}

}  // namespace matexbench
