// Unit tests of auto's allreduce table (algorithms/allreduce_table.h): the
// bands drawn from measurements whose winner at each size is known in closed
// form, the margin flat is given, how far each family's measurements reach,
// and the broadcast format.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "algorithms/allreduce_table.h"
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
  ASSERT_LE(data.size(), AllreduceTable::serialized_capacity(kSizes.size()));
  data.resize(AllreduceTable::serialized_capacity(kSizes.size()), 0);  // padded, as broadcast
  AllreduceTable back = AllreduceTable::deserialize(data);
  EXPECT_DOUBLE_EQ(back.calibration_seconds, 0.0042);
  EXPECT_TRUE(back.cores_shared);
  ASSERT_EQ(back.bands.size(), table.bands.size());
  for (size_t i = 0; i < table.bands.size(); ++i) {
    EXPECT_EQ(back.bands[i].up_to_bytes, table.bands[i].up_to_bytes);
    EXPECT_EQ(back.bands[i].family, table.bands[i].family);
  }
  ASSERT_EQ(back.measured.size(), kSizes.size());
  for (size_t i = 0; i < kSizes.size(); ++i) {
    EXPECT_EQ(back.measured[i].bytes, kSizes[i]);
    for (int f = 0; f < kAllreduceFamilies; ++f) {
      EXPECT_DOUBLE_EQ(back.measured[i].seconds[f], table.measured[i].seconds[f]);
    }
  }
  EXPECT_EQ(back.explain(), table.explain());
  EXPECT_NE(table.explain().find("some node has more ranks than cores"), std::string::npos) << table.explain();
}

TEST(AllreduceTable, RefusesAnotherVersionOrATruncatedTable) {
  std::vector<double> data = {2, 0, 0, 0, 0};
  try {
    AllreduceTable::deserialize(data);
    ADD_FAILURE() << "version 2 accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL);
  }
  data = {1, 3, 0, 0, 0, 64};  // three measurements announced, a fraction of one present
  try {
    AllreduceTable::deserialize(data);
    ADD_FAILURE() << "a truncated table accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL);
  }
}

// Every field a corrupt buffer could spoil, one at a time, from a good table.
TEST(AllreduceTable, RefusesCorruptFields) {
  const Line flat{10e-6, 1e9}, small{2e-6, 0.5e9}, rail{30e-6, 4e9};
  const std::vector<double> good =
      AllreduceTable::from_measurements(measure(kSizes, flat, small, rail, 16384), 0.001, false).serialize();
  ASSERT_NO_THROW(AllreduceTable::deserialize(good));
  const size_t bands_at = 5 + kSizes.size() * 4;  // header, then 4 doubles per measurement
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
      {5, -64, "negative size"},
      {6, std::nan(""), "NaN time"},
      {bands_at, std::nan(""), "NaN band size"},
      {bands_at + 1, 7, "family 7"},
      {bands_at + 2, 0, "bands out of order"},
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
