// report_format.h - matex-topo's two output forms: an aligned text table and
// one JSON object, both written by rank 0 from the gathered reports.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "topology/hardware.h"
#include "topology/layout.h"
#include "rank_report.h"

namespace matexcomm::topo {

struct JobSummary {
  int world_size = 0;
  int node_count = 0;
  bool virtual_nodes = false;
  std::vector<int> node_sizes;
  HardwareInfo machine;  // as seen by rank 0
};

void print_text_report(std::ostream& out, const JobSummary& job, const std::vector<RankReport>& ranks);
void print_json_report(std::ostream& out, const JobSummary& job, const std::vector<RankReport>& ranks);

// `text` as a JSON string literal, quotes included.
std::string json_quoted(const std::string& text);

}  // namespace matexcomm::topo
