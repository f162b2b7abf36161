// result_table.h - the nccl-tests style table that rank 0 prints: header
// lines, one line per row, and the footer (wrong values, average busbw).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "result_row.h"

namespace matexbench {

class ResultTable {
 public:
  ResultTable(matex_collective_t coll, int world_size, bool compare_mpi, bool check);

  std::vector<std::string> header() const;
  // The row's line(s); also adds it to the footer's totals.
  std::vector<std::string> format(const ResultRow& row);
  std::vector<std::string> footer() const;
  // True when any value, ours or MPI's, was wrong.
  bool failed() const { return wrong_total_ > 0; }

 private:
  matex_collective_t coll_;
  int world_size_;
  bool compare_mpi_;
  bool check_;
  uint64_t wrong_total_ = 0;
  double busbw_sum_ = 0.0;
  double mpi_busbw_sum_ = 0.0;
  int busbw_count_ = 0;
};

}  // namespace matexbench
