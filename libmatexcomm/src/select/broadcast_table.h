// broadcast_table.h - auto's measured choice of broadcast, by message size.
//
// Where the hierarchy can help (several nodes, some with several ranks),
// broadcast has two algorithms: flat (MPI's own) and hier (across the node
// leaders, then inside each node). Without a table auto runs hier there.
// A tuning file (matex-tune) times both; in three files of 2,2 and 3,1 here
// flat was up to 46 % faster up to 16-256 KiB, and hier 13-58 % faster from
// 1-4 MiB. The table holds, per size band, which of the two to run:
//   - at each measured size, hier where it beats flat by kMargin, else flat
//     (where the hierarchy cannot beat MPI, auto runs MPI);
//   - a band ends halfway (geometrically) between two measured sizes whose
//     choices differ; below the smallest size the smallest's choice holds,
//     past the largest the largest's.
// Rank 0 builds it from the file and broadcasts it with the allreduce table,
// so every rank makes the same choice for the same count.
// Cost: building walks the measured sizes once; a lookup walks the bands.
// Preconditions: times sorted by growing size, every time above 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "select/allreduce_table.h"

namespace matexcomm {

struct BroadcastTable {
  struct Timing {
    uint64_t bytes = 0;
    double flat_seconds = 0;
    double hier_seconds = 0;
  };
  struct Band {
    uint64_t up_to_bytes = 0;  // the band covers sizes up to this (the last band: every larger size too)
    bool hierarchical = false;
  };
  // hier must beat flat by as much as a family must beat flat in the allreduce table.
  static constexpr double kMargin = AllreduceTable::kMargin;
  static constexpr size_t kMaxTimings = 48;  // what one broadcast carries

  std::vector<Timing> timings;  // by growing size
  std::vector<Band> bands;      // by growing size; empty: no table (auto's fixed rule)

  static BroadcastTable from_timings(std::vector<Timing> timings);
  bool hierarchical_for(size_t bytes) const;

  // A flat array of doubles for one MPI_Bcast, and back (serialized_capacity() doubles at most).
  std::vector<double> serialize() const;
  static BroadcastTable deserialize(const std::vector<double>& data);
  static size_t serialized_capacity();

  // Lines for matex-bench --explain.
  std::string explain() const;
};

}  // namespace matexcomm
