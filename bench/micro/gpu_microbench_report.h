// gpu_microbench_report.h - the output of matex-gpu-microbench: one table per
// measurement, the SUMMARY line for scripts and the --json document.
//
// GB/s is 1e9 bytes per second; sizes are the bytes moved once (a copy of n
// bytes counts n, not 2n for its read and write).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_microbench_cases.h"

namespace matexbench {

struct SizeResults {
  size_t bytes = 0;
  CopyTiming d2d;
  size_t equal_tensors = 0;
  PackTiming equal_pack;  // the total in equal tensors
  size_t resnet50_tensors = 0;
  PackTiming resnet50_pack;  // the total in ResNet-50's gradient proportions
  HostCopyTiming host;
  std::vector<StagingTiming> staging;  // every chunk x slots with a step that does nothing
  StagingTiming staging_mpi;           // the default chunk x slots, MPI_Allreduce over MPI_COMM_SELF
  uint64_t wrong() const;
  const StagingTiming& staging_default() const;  // kDefaultStagingChunkBytes x kDefaultStagingSlots
  const StagingTiming& staging_best() const;     // the shortest time
};

// The tables, each line ready to print.
std::vector<std::string> result_tables(const std::vector<SizeResults>& results);

// SUMMARY pack_pct_of_d2d_at_256MiB=... wrong=<int> (nan for figures of a
// size that was not measured), preceded by a '#' line saying what it holds.
std::vector<std::string> summary_lines(const std::vector<SizeResults>& results);

// Writes the document; returns "" or an error naming the file.
std::string write_gpu_microbench_json(const std::string& path, const std::string& device,
                                      const std::vector<SizeResults>& results);

}  // namespace matexbench
