// allreduce_table.h - auto's measured choice of allreduce, by message size.
//
// A table names, per size band, the family of allreduce to run:
//   kFlat        MPI's own allreduce;
//   kSmall       one or two shared-memory flag waits: oneshot on one node, rab on several;
//   kRail        the bandwidth algorithms, rs_ar_ag or rs_ar_ag_cma as the CMA
//                size rule picks (see select_allreduce);
//   kCopies      rs_ar_ag, whatever the size;
//   kSingleCopy  rs_ar_ag_cma, whatever the size.
// The calibration at init (select/selector_calibrate.cc) times flat, small
// and rail; a tuning file (matex-tune, select/selector_tuning_file.cc)
// holds flat, small, copies and single copy, out of place and in place.
// Rank 0 turns the slowest rank's times into size bands and broadcasts them:
// every rank holds the same bands, so every rank makes the same choice.
// Between two measured sizes a family's time is interpolated on log-log
// axes; past the largest it grows along the slope of its last two points;
// below the smallest it is the smallest's. The calibration at init, which
// times no more than 1 MiB, names a family for every larger size instead
// (`past_largest`): calls that fit the caches do not show where calls that
// stream from memory cross over. A family other than flat must
// beat flat by kMargin to be chosen: where the hierarchy cannot beat MPI,
// auto runs MPI.
// Placement: out-of-place times pick each band's family. Where that is a
// rail family and in-place times were measured, the faster rail family in
// place serves in-place calls. The two only ever differ between rail
// families, which make the same calls across nodes; ranks of one node must
// then agree on in place (else MATEX_ERR_MISMATCH), as --explain shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace matexcomm {

enum class AllreduceFamily : int { kFlat = 0, kSmall = 1, kRail = 2, kCopies = 3, kSingleCopy = 4 };
constexpr int kAllreduceFamilies = 5;
const char* family_name(AllreduceFamily family);
bool is_rail_family(AllreduceFamily family);

struct AllreduceTable {
  // The slowest rank's seconds per call, per family (negative: not measured).
  struct Measurement {
    uint64_t bytes = 0;
    double seconds[kAllreduceFamilies] = {-1, -1, -1, -1, -1};           // out of place
    double in_place_seconds[kAllreduceFamilies] = {-1, -1, -1, -1, -1};  // rail families only
  };
  struct Band {
    uint64_t up_to_bytes = 0;  // the band covers sizes up to this (the last band: every larger size too)
    AllreduceFamily family = AllreduceFamily::kRail;
    AllreduceFamily in_place_family = AllreduceFamily::kRail;  // a rail family only where `family` is one
  };
  static constexpr double kMargin = 0.03;
  static constexpr size_t kMaxMeasurements = 48;  // what one broadcast carries

  std::vector<Measurement> measured;  // by growing size
  std::vector<Band> bands;            // by growing size; empty: flat everywhere
  // What measuring cost (the slowest rank's); negative: the table came from a tuning file.
  double calibration_seconds = 0;
  bool cores_shared = false;  // some host had more ranks than cores while measuring
  // Serves every size past the largest measured one; none: the families' extrapolated times decide.
  std::optional<AllreduceFamily> past_largest;

  // Builds the bands from `measured` (sorted by size, 1 to kMaxMeasurements entries).
  static AllreduceTable from_measurements(std::vector<Measurement> measured, double calibration_seconds,
                                          bool cores_shared,
                                          std::optional<AllreduceFamily> past_largest = std::nullopt);
  AllreduceFamily family_for(size_t bytes, bool in_place = false) const;
  // A family's modelled seconds at `bytes` (negative where it was not measured).
  double predicted_seconds(AllreduceFamily family, size_t bytes, bool in_place = false) const;

  // A flat array of doubles for one MPI_Bcast, and back. Sizes stay exact up to 2^53 bytes.
  std::vector<double> serialize() const;
  static AllreduceTable deserialize(const std::vector<double>& data);
  // The most doubles serialize() writes (kMaxMeasurements sizes).
  static size_t serialized_capacity();

  // Lines for matex-bench --explain: what was measured and why each band picks its family.
  std::string explain() const;
};

}  // namespace matexcomm
