// BroadcastTable: the bands a tuning file's broadcast times give, the lookup
// by size, and the round trip through the doubles that rank 0 broadcasts.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "select/broadcast_table.h"
#include "core/error.h"

namespace matexcomm {
namespace {

using Timing = BroadcastTable::Timing;

// Flat faster up to 64 KiB, hier from 1 MiB: 2,2 here in a tuning file.
std::vector<Timing> flat_then_hier() {
  return {{1024, 16e-6, 17e-6}, {65536, 45e-6, 55e-6}, {1 << 20, 470e-6, 400e-6}, {16 << 20, 7.6e-3, 6.4e-3}};
}

TEST(BroadcastTable, FlatUpToTheCrossingHierBeyond) {
  const BroadcastTable table = BroadcastTable::from_timings(flat_then_hier());
  ASSERT_EQ(table.bands.size(), 2u);
  // The band ends halfway (geometrically) between 64 KiB and 1 MiB: 256 KiB.
  EXPECT_EQ(table.bands[0].up_to_bytes, 256u << 10);
  EXPECT_FALSE(table.bands[0].hierarchical);
  EXPECT_TRUE(table.bands[1].hierarchical);
  EXPECT_FALSE(table.hierarchical_for(0));
  EXPECT_FALSE(table.hierarchical_for(1));         // below the smallest size: its choice
  EXPECT_FALSE(table.hierarchical_for(65536));
  EXPECT_FALSE(table.hierarchical_for(256 << 10));
  EXPECT_TRUE(table.hierarchical_for((256 << 10) + 1));
  EXPECT_TRUE(table.hierarchical_for(size_t{1} << 40));  // past the largest: its choice
}

TEST(BroadcastTable, HierMustBeatFlatByTheMargin) {
  // 2 % faster is within the margin: flat (MPI) stays; 4 % is not.
  const double flat = 100e-6;
  BroadcastTable close = BroadcastTable::from_timings({{4096, flat, flat * 0.98}});
  ASSERT_EQ(close.bands.size(), 1u);
  EXPECT_FALSE(close.hierarchical_for(4096));
  BroadcastTable clear = BroadcastTable::from_timings({{4096, flat, flat * 0.96}});
  EXPECT_TRUE(clear.hierarchical_for(4096));
}

TEST(BroadcastTable, EveryChangeOfChoiceMakesABand) {
  // hier, flat, hier across three sizes: three bands, ending at 2 KiB and 8 KiB.
  const BroadcastTable table =
      BroadcastTable::from_timings({{1024, 10e-6, 5e-6}, {4096, 10e-6, 20e-6}, {16384, 40e-6, 20e-6}});
  ASSERT_EQ(table.bands.size(), 3u);
  EXPECT_EQ(table.bands[0].up_to_bytes, 2048u);
  EXPECT_EQ(table.bands[1].up_to_bytes, 8192u);
  EXPECT_TRUE(table.hierarchical_for(2048));
  EXPECT_FALSE(table.hierarchical_for(2049));
  EXPECT_FALSE(table.hierarchical_for(8192));
  EXPECT_TRUE(table.hierarchical_for(8193));
}

TEST(BroadcastTable, SurvivesTheTripThroughDoubles) {
  const BroadcastTable table = BroadcastTable::from_timings(flat_then_hier());
  std::vector<double> data = table.serialize();
  ASSERT_LE(data.size(), BroadcastTable::serialized_capacity());
  data.resize(BroadcastTable::serialized_capacity(), 0);  // as the broadcast pads it
  const BroadcastTable back = BroadcastTable::deserialize(data);
  ASSERT_EQ(back.bands.size(), table.bands.size());
  for (size_t i = 0; i < table.bands.size(); ++i) {
    EXPECT_EQ(back.bands[i].up_to_bytes, table.bands[i].up_to_bytes);
    EXPECT_EQ(back.bands[i].hierarchical, table.bands[i].hierarchical);
  }
  ASSERT_EQ(back.timings.size(), table.timings.size());
  EXPECT_EQ(back.timings[2].bytes, table.timings[2].bytes);
  EXPECT_DOUBLE_EQ(back.timings[2].hier_seconds, table.timings[2].hier_seconds);
  for (size_t bytes : {size_t{1}, size_t{65536}, size_t{1} << 20, size_t{1} << 40}) {
    EXPECT_EQ(back.hierarchical_for(bytes), table.hierarchical_for(bytes)) << bytes;
  }
  // No table (a file without broadcast timings) travels as no table.
  const BroadcastTable none = BroadcastTable::deserialize(BroadcastTable().serialize());
  EXPECT_TRUE(none.bands.empty());
}

TEST(BroadcastTable, RefusesTimingsThatCannotServe) {
  EXPECT_THROW(BroadcastTable::from_timings({}), Error);
  EXPECT_THROW(BroadcastTable::from_timings({{1024, 0, 1e-6}}), Error);
  EXPECT_THROW(BroadcastTable::from_timings({{1024, 1e-6, -1}}), Error);
  EXPECT_THROW(BroadcastTable::from_timings({{4096, 1e-6, 1e-6}, {1024, 1e-6, 1e-6}}), Error);  // not growing
  EXPECT_THROW(BroadcastTable::from_timings(std::vector<Timing>(BroadcastTable::kMaxTimings + 1, {64, 1e-6, 1e-6})),
               Error);
  std::vector<double> foreign = BroadcastTable().serialize();
  foreign[0] = 99;  // another format version
  EXPECT_THROW(BroadcastTable::deserialize(foreign), Error);
}

// Every field a corrupt buffer could spoil, one at a time, from a good table:
// an error that names the field, never a cast of a NaN or a negative number.
TEST(BroadcastTable, RefusesCorruptFields) {
  const std::vector<double> good = BroadcastTable::from_timings(flat_then_hier()).serialize();
  ASSERT_NO_THROW(BroadcastTable::deserialize(good));
  const size_t timings = flat_then_hier().size();
  const size_t bands_at = 3 + timings * 3;  // header, then 3 doubles per timing
  struct Spoil {
    size_t at;
    double value;
    const char* field;
  };
  const Spoil spoils[] = {
      {1, std::nan(""), "timing count"},
      {1, -1, "timing count"},
      {1, 1e300, "timing count"},
      {2, 2.5, "band count"},
      {2, static_cast<double>(BroadcastTable::kMaxTimings + 1), "band count"},
      {3, -64, "size"},
      {4, std::nan(""), "flat time"},
      {5, HUGE_VAL, "hier time"},
      {bands_at, std::nan(""), "band size"},
      {bands_at, -2, "band size"},
      {bands_at + 1, 0.5, "band choice"},
      {bands_at + 1, 2, "band choice"},
      {bands_at + 2, 0, "bands out of order"},
  };
  for (const Spoil& spoil : spoils) {
    std::vector<double> data = good;
    ASSERT_LT(spoil.at, data.size()) << spoil.field;
    data[spoil.at] = spoil.value;
    try {
      BroadcastTable::deserialize(data);
      ADD_FAILURE() << spoil.field << " = " << spoil.value << " accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.status(), MATEX_ERR_INTERNAL) << spoil.field;
      EXPECT_NE(error.message().find(spoil.field), std::string::npos) << error.message();
    }
  }
}

}  // namespace
}  // namespace matexcomm
