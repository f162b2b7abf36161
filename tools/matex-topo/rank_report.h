// rank_report.h - one rank's line of the matex-topo report, its byte
// encoding, and the gather that brings every rank's line to rank 0.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace matexcomm::topo {

struct RankReport {
  int rank = 0;
  int node = 0;
  int local_rank = 0;
  int local_size = 0;
  std::string host;
  std::string bound_cores;
  std::string numa;
  std::string nearest_gpu;
  std::string thread_cpus;  // the CPUs of its thread budget (topo::budget_threads)
  std::string threads;      // "<intra-op>/<inter-op>" threads of that budget (+ " shared": the host has more
                            // ranks than cores), "-" with MATEX_THREADS=off
};

// Length-prefixed fields ("<length>:<bytes>"), so any string survives.
std::string encode_report(const RankReport& report);
RankReport decode_report(const std::string& bytes);

// Collective over `comm`. Rank `root` gets every rank's report in rank
// order; the other ranks get an empty vector.
std::vector<RankReport> gather_reports(MPI_Comm comm, int root, const RankReport& mine);

}  // namespace matexcomm::topo
