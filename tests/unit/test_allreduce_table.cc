// Unit tests of auto's allreduce table (select/allreduce_table.h): the
// bands drawn from measurements whose winner at each size is known in closed
// form, the margin flat is given, how far each family's measurements reach,
// and the broadcast format.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "select/allreduce_table.h"
#include "core/error.h"

namespace matexcomm {
namespace {

using Family = AllreduceFamily;
constexpr int kFlat = static_cast<int>(Family::kFlat);
constexpr int kSmall = static_cast<int>(Family::kSmall);
constexpr int kRail = static_cast<int>(Family::kRail);

// Per family: seconds = latency + bytes / bandwidth (negative latency: not measured).
struct Line {
  double latency;
  double bandwidth;
  double at(double bytes) const { return latency < 0 ? -1 : latency + bytes / bandwidth; }
};

std::vector<AllreduceTable::Measurement> measure(const std::vector<uint64_t>& sizes, Line flat, Line small,
                                                 Line rail, uint64_t small_up_to) {
  std::vector<AllreduceTable::Measurement> out;
  for (uint64_t bytes : sizes) {
    AllreduceTable::Measurement m;
    m.bytes = bytes;
    m.seconds[kFlat] = flat.at(static_cast<double>(bytes));
    m.seconds[kSmall] = bytes <= small_up_to ? small.at(static_cast<double>(bytes)) : -1;
    m.seconds[kRail] = rail.at(static_cast<double>(bytes));
    out.push_back(m);
  }
  return out;
}

const std::vector<uint64_t> kSizes = {64, 1024, 16384, 262144, 1048576};

// Flat: 10 us + 1 GB/s; small: 2 us + 0.5 GB/s (wins while tiny); rail: 30 us
// + 4 GB/s. Small beats flat while 2 + n/0.5e3 < 10 + n/1e3 (n < 8000 B);
// rail beats flat from 20 us = n (1/1e3 - 1/4e3) us/B, n > 26.7 KB.
TEST(AllreduceTable, BandsFollowTheFastestFamily) {
  const Line flat{10e-6, 1e9}, small{2e-6, 0.5e9}, rail{30e-6, 4e9};
  AllreduceTable table =
      AllreduceTable::from_measurements(measure(kSizes, flat, small, rail, 16384), 0.001, false);
  EXPECT_EQ(table.family_for(1), Family::kSmall);
  EXPECT_EQ(table.family_for(64), Family::kSmall);
  EXPECT_EQ(table.family_for(1024), Family::kSmall);
  EXPECT_EQ(table.family_for(16384), Family::kFlat);  // between the crossovers
  EXPECT_EQ(table.family_for(65536), Family::kRail);
  EXPECT_EQ(table.family_for(size_t{1} << 30), Family::kRail);  // past the largest size: its slope
  EXPECT_EQ(table.family_for(~size_t{0}), Family::kRail);
  // Sizes between powers of two take the band of the next power.
  EXPECT_EQ(table.family_for(1025), table.family_for(2048));
}

TEST(AllreduceTable, FlatWinsUnlessBeatenByTheMargin) {
  const Line flat{10e-6, 1e9};
  // Exactly proportional to flat: 2 % faster everywhere (inside the margin), then 6 %.
  for (double factor : {0.98, 0.94}) {
    const Line rail{10e-6 * factor, 1e9 / factor};
    AllreduceTable table =
        AllreduceTable::from_measurements(measure(kSizes, flat, Line{-1, 1}, rail, 0), 0.001, false);
    const Family expected = 1 - factor > AllreduceTable::kMargin ? Family::kRail : Family::kFlat;
    for (size_t bytes : {size_t{4}, size_t{4096}, size_t{1} << 20, size_t{1} << 28}) {
      EXPECT_EQ(table.family_for(bytes), expected) << "factor " << factor << ", " << bytes << " B";
    }
  }
}

TEST(AllreduceTable, AFamilyMeasuredOnlyAtSmallSizesStopsThere) {
  // Small is the fastest wherever measured, and its measured slope would
  // keep it ahead far beyond: it still must not be chosen past 16 KiB.
  const Line flat{10e-6, 1e9}, small{1e-6, 100e9}, rail{20e-6, 2e9};
  AllreduceTable table =
      AllreduceTable::from_measurements(measure(kSizes, flat, small, rail, 16384), 0.001, false);
  EXPECT_EQ(table.family_for(16384), Family::kSmall);
  EXPECT_LT(table.predicted_seconds(Family::kSmall, 32768), 0);
  EXPECT_NE(table.family_for(32768), Family::kSmall);
  EXPECT_NE(table.family_for(size_t{1} << 30), Family::kSmall);
}

TEST(AllreduceTable, AFamilyGivenForLargerSizesServesPastTheLargestMeasured) {
  // Flat wins at every measured size and its slope would keep it ahead; the
  // calibration at init names rail for what it did not time.
  const Line flat{10e-6, 4e9}, rail{30e-6, 2e9};
  AllreduceTable table = AllreduceTable::from_measurements(measure(kSizes, flat, Line{-1, 1}, rail, 0), 0.001,
                                                           false, Family::kRail);
  EXPECT_EQ(table.family_for(1 << 20), Family::kFlat);
  EXPECT_EQ(table.family_for((1 << 20) + 1), Family::kRail);
  EXPECT_EQ(table.family_for(size_t{1} << 36), Family::kRail);
  EXPECT_EQ(table.family_for(~size_t{0}, true), Family::kRail);
  // Without it, the measured slopes decide: flat.
  AllreduceTable extrapolated =
      AllreduceTable::from_measurements(measure(kSizes, flat, Line{-1, 1}, rail, 0), 0.001, false);
  EXPECT_EQ(extrapolated.family_for(size_t{1} << 36), Family::kFlat);
  // It travels with the table, and --explain says so.
  std::vector<double> data = table.serialize();
  data.resize(AllreduceTable::serialized_capacity(), 0);
  AllreduceTable back = AllreduceTable::deserialize(data);
  ASSERT_TRUE(back.past_largest.has_value());
  EXPECT_EQ(*back.past_largest, Family::kRail);
  EXPECT_EQ(back.family_for(size_t{1} << 30), Family::kRail);
  EXPECT_NE(back.explain().find("past 1 MiB, the largest size timed: rail"), std::string::npos) << back.explain();
  EXPECT_FALSE(extrapolated.past_largest.has_value());
}

TEST(AllreduceTable, InterpolatesOnLogLogAxes) {
  std::vector<AllreduceTable::Measurement> m(2);
  m[0].bytes = 1000;
  m[0].seconds[kFlat] = 1e-6;
  m[1].bytes = 100000;
  m[1].seconds[kFlat] = 100e-6;
  AllreduceTable table = AllreduceTable::from_measurements(m, 0, false);
  // Halfway on a log axis: 10,000 B; time is a power law through both points.
  EXPECT_NEAR(table.predicted_seconds(Family::kFlat, 10000), 10e-6, 1e-12);
  EXPECT_DOUBLE_EQ(table.predicted_seconds(Family::kFlat, 10), 1e-6);  // below: the smallest's time
  // Above: the last slope, 99 us per 99,000 B.
  EXPECT_NEAR(table.predicted_seconds(Family::kFlat, 200000), 200e-6, 1e-12);
  EXPECT_LT(table.predicted_seconds(Family::kRail, 1000), 0);  // never measured
}

TEST(AllreduceTable, SurvivesTheBroadcastFormat) {
  const Line flat{10e-6, 1e9}, small{2e-6, 0.5e9}, rail{30e-6, 4e9};
  AllreduceTable table =
      AllreduceTable::from_measurements(measure(kSizes, flat, small, rail, 16384), 0.0042, true);
  std::vector<double> data = table.serialize();
  ASSERT_LE(data.size(), AllreduceTable::serialized_capacity());
  data.resize(AllreduceTable::serialized_capacity(), 0);  // padded, as broadcast
  AllreduceTable back = AllreduceTable::deserialize(data);
  EXPECT_DOUBLE_EQ(back.calibration_seconds, 0.0042);
  EXPECT_TRUE(back.cores_shared);
  ASSERT_EQ(back.bands.size(), table.bands.size());
  for (size_t i = 0; i < table.bands.size(); ++i) {
    EXPECT_EQ(back.bands[i].up_to_bytes, table.bands[i].up_to_bytes);
    EXPECT_EQ(back.bands[i].family, table.bands[i].family);
    EXPECT_EQ(back.bands[i].in_place_family, table.bands[i].in_place_family);
  }
  ASSERT_EQ(back.measured.size(), kSizes.size());
  for (size_t i = 0; i < kSizes.size(); ++i) {
    EXPECT_EQ(back.measured[i].bytes, kSizes[i]);
    for (int f = 0; f < kAllreduceFamilies; ++f) {
      EXPECT_DOUBLE_EQ(back.measured[i].seconds[f], table.measured[i].seconds[f]);
      EXPECT_DOUBLE_EQ(back.measured[i].in_place_seconds[f], table.measured[i].in_place_seconds[f]);
    }
  }
  EXPECT_EQ(back.explain(), table.explain());
  EXPECT_NE(table.explain().find("some host has more ranks than cores"), std::string::npos) << table.explain();
}

TEST(AllreduceTable, RefusesAnotherVersionOrATruncatedTable) {
  std::vector<double> data = {1, 0, 0, 0, 0};
  try {
    AllreduceTable::deserialize(data);
    ADD_FAILURE() << "version 1 accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL);
  }
  data = {2, 3, 0, 0, 0, 64};  // three measurements announced, a fraction of one present
  try {
    AllreduceTable::deserialize(data);
    ADD_FAILURE() << "a truncated table accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL);
  }
}

// A tuning file's families: rs_ar_ag and rs_ar_ag_cma by name, out of place
// and in place. Out of place, copies win from 16 KiB (flat: 10 us + 1 GB/s;
// copies 20 us + 4 GB/s, crossing at 26.7 KB); single copies are 10 % slower
// out of place but twice as fast in place, so in-place calls take them.
TEST(AllreduceTable, InPlaceTakesTheFastestRailFamilyInPlace) {
  const Line flat{10e-6, 1e9}, copies{20e-6, 4e9}, single{22e-6, 3.6e9}, single_in{10e-6, 8e9};
  std::vector<AllreduceTable::Measurement> m;
  for (uint64_t bytes : kSizes) {
    AllreduceTable::Measurement one;
    one.bytes = bytes;
    const double n = static_cast<double>(bytes);
    one.seconds[kFlat] = flat.at(n);
    one.seconds[static_cast<int>(Family::kCopies)] = copies.at(n);
    one.seconds[static_cast<int>(Family::kSingleCopy)] = single.at(n);
    one.in_place_seconds[static_cast<int>(Family::kCopies)] = copies.at(n);
    one.in_place_seconds[static_cast<int>(Family::kSingleCopy)] = single_in.at(n);
    m.push_back(one);
  }
  AllreduceTable table = AllreduceTable::from_measurements(m, -1, false);
  EXPECT_EQ(table.family_for(1024), Family::kFlat);
  EXPECT_EQ(table.family_for(1024, true), Family::kFlat);  // placement never changes flat
  EXPECT_EQ(table.family_for(size_t{1} << 20), Family::kCopies);
  EXPECT_EQ(table.family_for(size_t{1} << 20, true), Family::kSingleCopy);
  EXPECT_EQ(table.family_for(size_t{1} << 30, true), Family::kSingleCopy);
  const std::string text = table.explain();
  EXPECT_NE(text.find("from a tuning file"), std::string::npos) << text;
  EXPECT_NE(text.find("rs_ar_ag_cma in"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks of a node must agree on in place here"), std::string::npos) << text;
}

// Without in-place times (the calibration at init), placement changes nothing.
TEST(AllreduceTable, WithoutInPlaceTimesPlacementChangesNothing) {
  const Line flat{10e-6, 1e9}, small{2e-6, 0.5e9}, rail{30e-6, 4e9};
  AllreduceTable table =
      AllreduceTable::from_measurements(measure(kSizes, flat, small, rail, 16384), 0.001, false);
  for (const auto& band : table.bands) EXPECT_EQ(band.in_place_family, band.family);
  EXPECT_EQ(table.explain().find("must agree"), std::string::npos);
}

// Every field a corrupt buffer could spoil, one at a time, from a good table.
TEST(AllreduceTable, RefusesCorruptFields) {
  const Line flat{10e-6, 1e9}, small{2e-6, 0.5e9}, rail{30e-6, 4e9};
  const std::vector<double> good =
      AllreduceTable::from_measurements(measure(kSizes, flat, small, rail, 16384), 0.001, false).serialize();
  ASSERT_NO_THROW(AllreduceTable::deserialize(good));
  const size_t bands_at = 6 + kSizes.size() * 11;  // header, then 11 doubles per measurement
  struct Spoil {
    size_t at;
    double value;
    const char* what;
  };
  const Spoil spoils[] = {
      {1, std::nan(""), "NaN measurement count"},
      {1, -1, "negative measurement count"},
      {1, 1e300, "huge measurement count"},
      {2, 0, "no bands"},
      {2, 2.5, "fractional band count"},
      {5, 7, "family 7 past the largest size"},
      {5, std::nan(""), "NaN family past the largest size"},
      {6, -64, "negative size"},
      {7, std::nan(""), "NaN time"},
      {bands_at, std::nan(""), "NaN band size"},
      {bands_at + 1, 7, "family 7"},
      {bands_at + 2, 7, "in-place family 7"},
      {bands_at + 2, static_cast<double>(kFlat), "placement changes a small band (the first) to flat"},
      {bands_at + 3, 0, "bands out of order"},
      {1, 49, "more measurements than a broadcast carries"},
  };
  for (const Spoil& spoil : spoils) {
    std::vector<double> data = good;
    ASSERT_LT(spoil.at, data.size()) << spoil.what;
    data[spoil.at] = spoil.value;
    try {
      AllreduceTable::deserialize(data);
      ADD_FAILURE() << spoil.what << " accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL) << spoil.what;
    }
  }
}

}  // namespace
}  // namespace matexcomm
