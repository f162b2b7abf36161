// broadcast_table.cc - size bands from measured broadcast times (see broadcast_table.h).
#include "select/broadcast_table.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "select/table_numbers.h"
#include "core/table_text.h"
#include "core/error.h"

namespace matexcomm {

namespace {

constexpr double kTableVersion = 1;
constexpr size_t kTableHeader = 3;  // version, timings, bands
constexpr size_t kPerTiming = 3;  // bytes, flat seconds, hier seconds
constexpr size_t kValuesPerBand = 2;    // up to, hierarchical
constexpr uint64_t kEverything = std::numeric_limits<uint64_t>::max();

bool hier_wins(const BroadcastTable::Timing& t) {
  return t.hier_seconds < t.flat_seconds * (1 - BroadcastTable::kMargin);
}

}  // namespace

BroadcastTable BroadcastTable::from_timings(std::vector<Timing> timings) {
  if (timings.empty() || timings.size() > kMaxTimings) {
    throw Error(MATEX_ERR_INVALID_ARG, "it has " + std::to_string(timings.size()) +
                                           " broadcast sizes timed for both flat and hier (1 to " +
                                           std::to_string(kMaxTimings) + " serve)");
  }
  for (size_t i = 0; i < timings.size(); ++i) {
    const Timing& t = timings[i];
    if (!(t.flat_seconds > 0) || !(t.hier_seconds > 0) || (i > 0 && t.bytes <= timings[i - 1].bytes)) {
      throw Error(MATEX_ERR_INVALID_ARG, "its broadcast timing at " + std::to_string(t.bytes) +
                                             " B is not positive, or not above the size before it");
    }
  }
  BroadcastTable table;
  table.timings = std::move(timings);
  const std::vector<Timing>& t = table.timings;
  for (size_t i = 1; i < t.size(); ++i) {
    if (hier_wins(t[i]) == hier_wins(t[i - 1])) continue;
    const double halfway = std::sqrt(static_cast<double>(t[i - 1].bytes) * static_cast<double>(t[i].bytes));
    table.bands.push_back({static_cast<uint64_t>(halfway), hier_wins(t[i - 1])});
  }
  table.bands.push_back({kEverything, hier_wins(t.back())});
  return table;
}

bool BroadcastTable::hierarchical_for(size_t bytes) const {
  for (const Band& band : bands) {
    if (bytes <= band.up_to_bytes) return band.hierarchical;
  }
  return !bands.empty() && bands.back().hierarchical;
}

std::vector<double> BroadcastTable::serialize() const {
  std::vector<double> data = {kTableVersion, static_cast<double>(timings.size()), static_cast<double>(bands.size())};
  for (const Timing& t : timings) {
    data.insert(data.end(), {static_cast<double>(t.bytes), t.flat_seconds, t.hier_seconds});
  }
  for (const Band& band : bands) {
    // The last band's "everything" is kept as -1: 2^64 - 1 has no exact double.
    data.insert(data.end(), {band.up_to_bytes == kEverything ? -1.0 : static_cast<double>(band.up_to_bytes),
                             band.hierarchical ? 1.0 : 0.0});
  }
  return data;
}

BroadcastTable BroadcastTable::deserialize(const std::vector<double>& data) {
  static constexpr const char* kTableName = "broadcast table";
  MATEX_REQUIRE(data.size() >= kTableHeader && data[0] == kTableVersion, MATEX_ERR_INTERNAL,
                "a broadcast table of another format arrived");
  const size_t timing_count = whole_number(data, 1, kMaxTimings, kTableName, "timing count");
  const size_t band_count = whole_number(data, 2, kMaxTimings, kTableName, "band count");
  MATEX_REQUIRE(data.size() >= kTableHeader + timing_count * kPerTiming + band_count * kValuesPerBand, MATEX_ERR_INTERNAL,
                "a truncated broadcast table arrived");
  BroadcastTable table;
  size_t at = kTableHeader;
  for (size_t i = 0; i < timing_count; ++i, at += kPerTiming) {
    table.timings.push_back({whole_number(data, at, 0x1p53, kTableName, "size"),
                             finite_number(data, at + 1, kTableName, "flat time"),
                             finite_number(data, at + 2, kTableName, "hier time")});
  }
  for (size_t i = 0; i < band_count; ++i, at += kValuesPerBand) {
    // -1 stands for every larger size (serialize()).
    const uint64_t up_to =
        data[at] == -1 ? kEverything : whole_number(data, at, 0x1p53, kTableName, "band size");
    MATEX_REQUIRE(table.bands.empty() || table.bands.back().up_to_bytes < up_to, MATEX_ERR_INTERNAL,
                  "a corrupt broadcast table arrived: bands out of order");
    table.bands.push_back({up_to, whole_number(data, at + 1, 1, kTableName, "band choice") == 1});
  }
  return table;
}

size_t BroadcastTable::serialized_capacity() { return kTableHeader + kMaxTimings * (kPerTiming + kValuesPerBand); }

std::string BroadcastTable::explain() const {
  if (bands.empty()) return "broadcast under auto: no measured table\n";
  std::string text = "broadcast under auto: measured in a tuning file\n";
  char row[96];
  std::snprintf(row, sizeof row, "  %12s  %14s  %14s\n", "bytes", "flat", "hier");
  text += row;
  for (const Timing& t : timings) {
    std::snprintf(row, sizeof row, "  %12s  %14s  %14s\n", with_unit(static_cast<double>(t.bytes)).c_str(),
                  microseconds(t.flat_seconds).c_str(), microseconds(t.hier_seconds).c_str());
    text += row;
  }
  text += "  choice (hier must be " + factor(kMargin * 100) +
          " % faster than flat; where the choice changes, the band ends halfway between the two sizes):\n";
  for (size_t i = 0; i < bands.size(); ++i) {
    const std::string range =
        band_range(i, bands.size(), i == 0 ? 0.0 : static_cast<double>(bands[i - 1].up_to_bytes),
                   static_cast<double>(bands[i].up_to_bytes));
    text += "    " + range + ": " + (bands[i].hierarchical ? "hier" : "flat") + "\n";
  }
  return text;
}

}  // namespace matexcomm
