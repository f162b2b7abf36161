// allreduce_table.h - auto's measured choice of allreduce, by message size.
//
// Calibration (comm/communicator_calibrate.cc) times three families of
// allreduce at a few sizes in the communicator's own layout:
//   kFlat   MPI's own allreduce;
//   kSmall  one or two shared-memory flag waits: oneshot on one node, rab on several;
//   kRail   the bandwidth algorithms, rs_ar_ag or rs_ar_ag_cma (which of the two
//           is the CMA size rule's call, see select_allreduce).
// Rank 0 turns the slowest rank's times into size bands, each naming the
// family to run, and broadcasts the table: every rank holds the same bands,
// so every rank makes the same choice. Between two measured sizes a family's
// time is interpolated on log-log axes; past the largest it grows along the
// slope of its last two points; below the smallest it is the smallest's.
// A family other than flat must beat flat by kMargin to be chosen: where
// the hierarchy cannot beat MPI, auto runs MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace matexcomm {

enum class AllreduceFamily : int { kFlat = 0, kSmall = 1, kRail = 2 };
constexpr int kAllreduceFamilies = 3;
const char* family_name(AllreduceFamily family);

struct AllreduceTable {
  // The slowest rank's seconds per call, per family (negative: not measured).
  struct Measurement {
    uint64_t bytes = 0;
    double seconds[kAllreduceFamilies] = {-1, -1, -1};
  };
  struct Band {
    uint64_t up_to_bytes = 0;  // the band covers sizes up to this (the last band: every larger size too)
    AllreduceFamily family = AllreduceFamily::kRail;
  };
  static constexpr double kMargin = 0.03;

  std::vector<Measurement> measured;  // by growing size
  std::vector<Band> bands;            // by growing size; empty: flat everywhere
  double calibration_seconds = 0;     // what measuring cost (the slowest rank's)
  bool cores_shared = false;          // some node had more ranks than cores while measuring

  // Builds the bands from `measured` (sorted by size, at least one entry).
  static AllreduceTable from_measurements(std::vector<Measurement> measured, double calibration_seconds,
                                          bool cores_shared);
  AllreduceFamily family_for(size_t bytes) const;
  // A family's modelled seconds at `bytes` (negative where it was not measured).
  double predicted_seconds(AllreduceFamily family, size_t bytes) const;

  // A flat array of doubles for one MPI_Bcast, and back. Sizes stay exact up to 2^53 bytes.
  std::vector<double> serialize() const;
  static AllreduceTable deserialize(const std::vector<double>& data);
  // The most doubles serialize() writes for `max_measurements` sizes.
  static size_t serialized_capacity(size_t max_measurements);

  // Lines for matex-bench --explain: what was measured and why each band picks its family.
  std::string explain() const;
};

}  // namespace matexcomm
