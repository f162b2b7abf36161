// allreduce_table.cc - size bands from measured allreduce times (see allreduce_table.h).
//
// Cost: building evaluates the model at every power of two from 1 B to
// 2^kLargestPower bytes (five families, twice, a few logs each):
// microseconds, once per layout. A lookup walks the bands (a handful).
// Preconditions: measurements sorted by size, flat measured at every size.
#include "select/allreduce_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "select/table_numbers.h"
#include "core/table_text.h"
#include "core/error.h"

namespace matexcomm {

namespace {

constexpr int kLargestPower = 40;  // bands are drawn up to 1 TiB; the last one covers the rest
constexpr double kVersion = 3;
constexpr size_t kHeader = 6;  // version, measurements, bands, calibration seconds, cores shared, past largest
constexpr size_t kPerMeasurement = 1 + 2 * kAllreduceFamilies;  // bytes, out-of-place and in-place seconds
constexpr size_t kPerBand = 3;                                  // up to, family, in-place family

}  // namespace

const char* family_name(AllreduceFamily family) {
  switch (family) {
    case AllreduceFamily::kFlat: return "flat";
    case AllreduceFamily::kSmall: return "small (oneshot / rab)";
    case AllreduceFamily::kRail: return "rail (rs_ar_ag / rs_ar_ag_cma by the CMA sizes)";
    case AllreduceFamily::kCopies: return "rs_ar_ag";
    case AllreduceFamily::kSingleCopy: return "rs_ar_ag_cma";
  }
  return "?";
}

bool is_rail_family(AllreduceFamily family) {
  return family == AllreduceFamily::kRail || family == AllreduceFamily::kCopies ||
         family == AllreduceFamily::kSingleCopy;
}

namespace {

double seconds_of(const AllreduceTable::Measurement& m, int family, bool in_place) {
  return in_place ? m.in_place_seconds[family] : m.seconds[family];
}

}  // namespace

double AllreduceTable::predicted_seconds(AllreduceFamily family, size_t bytes, bool in_place) const {
  const int f = static_cast<int>(family);
  std::vector<std::pair<double, double>> points;  // (bytes, seconds) where measured
  for (const Measurement& m : measured) {
    const double seconds = seconds_of(m, f, in_place);
    if (seconds > 0) points.emplace_back(static_cast<double>(m.bytes), seconds);
  }
  if (points.empty()) return -1;
  const double s = static_cast<double>(bytes);
  const auto& [first_bytes, first_seconds] = points.front();
  const auto& [last_bytes, last_seconds] = points.back();
  if (s <= first_bytes) return first_seconds;
  if (s > last_bytes) {
    // Only the families measured at the largest size extend past it: a family
    // timed at small sizes alone says nothing of large ones.
    if (last_bytes != static_cast<double>(measured.back().bytes)) return -1;
    if (points.size() < 2) return last_seconds * s / last_bytes;
    const auto& [before_bytes, before_seconds] = points[points.size() - 2];
    const double slope = (last_seconds - before_seconds) / (last_bytes - before_bytes);
    return last_seconds + (s - last_bytes) * std::max(slope, 0.0);
  }
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const auto& [a_bytes, a_seconds] = points[i];
    const auto& [b_bytes, b_seconds] = points[i + 1];
    if (s > b_bytes) continue;
    const double x = std::log(s / a_bytes) / std::log(b_bytes / a_bytes);
    return std::exp(std::log(a_seconds) + x * (std::log(b_seconds) - std::log(a_seconds)));
  }
  return last_seconds;
}

namespace {

// The band of one size from the families' modelled times.
AllreduceTable::Band fastest_band(const AllreduceTable& table, size_t bytes) {
  const double flat = table.predicted_seconds(AllreduceFamily::kFlat, bytes);
  AllreduceTable::Band band{bytes, AllreduceFamily::kFlat, AllreduceFamily::kFlat};
  double best_seconds = flat;
  for (int f = 1; f < kAllreduceFamilies; ++f) {
    const double seconds = table.predicted_seconds(static_cast<AllreduceFamily>(f), bytes);
    if (seconds <= 0) continue;
    const bool beats_flat = flat <= 0 || seconds < flat * (1 - AllreduceTable::kMargin);
    if (beats_flat && (band.family == AllreduceFamily::kFlat || seconds < best_seconds)) {
      band.family = static_cast<AllreduceFamily>(f);
      best_seconds = seconds;
    }
  }
  // In place: the fastest rail family in place, where a rail family won out of place.
  band.in_place_family = band.family;
  if (is_rail_family(band.family)) {
    double best_in_place = table.predicted_seconds(band.family, bytes, true);
    for (int f = 0; f < kAllreduceFamilies; ++f) {
      const AllreduceFamily rail = static_cast<AllreduceFamily>(f);
      const double seconds = is_rail_family(rail) ? table.predicted_seconds(rail, bytes, true) : -1;
      if (seconds > 0 && (best_in_place <= 0 || seconds < best_in_place)) {
        band.in_place_family = rail;
        best_in_place = seconds;
      }
    }
  }
  return band;
}

}  // namespace

AllreduceTable AllreduceTable::from_measurements(std::vector<Measurement> measurements, double calibration_seconds,
                                                 bool cores_shared, std::optional<AllreduceFamily> past_largest) {
  MATEX_REQUIRE(!measurements.empty() && measurements.size() <= kMaxMeasurements, MATEX_ERR_INTERNAL,
                "an allreduce table needs 1 to " + std::to_string(kMaxMeasurements) + " measurements");
  AllreduceTable table;
  table.measured = std::move(measurements);
  table.calibration_seconds = calibration_seconds;
  table.cores_shared = cores_shared;
  table.past_largest = past_largest;
  for (int power = 0; power <= kLargestPower; ++power) {
    const size_t bytes = size_t{1} << power;
    const Band band = past_largest && bytes > table.measured.back().bytes
                          ? Band{bytes, *past_largest, *past_largest}
                          : fastest_band(table, bytes);
    Band* last = table.bands.empty() ? nullptr : &table.bands.back();
    if (last != nullptr && last->family == band.family && last->in_place_family == band.in_place_family) {
      last->up_to_bytes = bytes;
    } else {
      table.bands.push_back(band);
    }
  }
  return table;
}

AllreduceFamily AllreduceTable::family_for(size_t bytes, bool in_place) const {
  for (const Band& band : bands) {
    if (bytes <= band.up_to_bytes) return in_place ? band.in_place_family : band.family;
  }
  if (bands.empty()) return AllreduceFamily::kFlat;
  return in_place ? bands.back().in_place_family : bands.back().family;
}

size_t AllreduceTable::serialized_capacity() {
  return kHeader + kMaxMeasurements * kPerMeasurement + kPerBand * (kLargestPower + 1);
}

std::vector<double> AllreduceTable::serialize() const {
  std::vector<double> data = {kVersion, static_cast<double>(measured.size()), static_cast<double>(bands.size()),
                              calibration_seconds, cores_shared ? 1.0 : 0.0,
                              past_largest ? static_cast<double>(*past_largest) : -1.0};
  for (const Measurement& m : measured) {
    data.push_back(static_cast<double>(m.bytes));
    for (double seconds : m.seconds) data.push_back(seconds);
    for (double seconds : m.in_place_seconds) data.push_back(seconds);
  }
  for (const Band& band : bands) {
    data.push_back(static_cast<double>(band.up_to_bytes));
    data.push_back(static_cast<double>(band.family));
    data.push_back(static_cast<double>(band.in_place_family));
  }
  return data;
}

AllreduceTable AllreduceTable::deserialize(const std::vector<double>& data) {
  static constexpr const char* kTableName = "allreduce table";
  MATEX_REQUIRE(data.size() >= kHeader && data[0] == kVersion, MATEX_ERR_INTERNAL,
                "an allreduce table of another version or none arrived");
  AllreduceTable table;
  const size_t measurements = whole_number(data, 1, kMaxMeasurements, kTableName, "measurement count");
  const size_t bands = whole_number(data, 2, kLargestPower + 1, kTableName, "band count");
  MATEX_REQUIRE(bands >= 1 && data.size() >= kHeader + measurements * kPerMeasurement + kPerBand * bands,
                MATEX_ERR_INTERNAL, "a truncated allreduce table arrived");
  table.calibration_seconds = data[3];
  table.cores_shared = data[4] != 0;
  if (data[5] != -1)  // -1: none
    table.past_largest = static_cast<AllreduceFamily>(
        whole_number(data, 5, kAllreduceFamilies - 1, kTableName, "family past the largest size"));
  size_t at = kHeader;
  for (size_t i = 0; i < measurements; ++i) {
    Measurement m;
    m.bytes = whole_number(data, at++, 0x1p53, kTableName, "size");
    for (double* column : {m.seconds, m.in_place_seconds}) {
      for (int f = 0; f < kAllreduceFamilies; ++f) {
        column[f] = finite_number(data, at++, kTableName, "time");
      }
    }
    table.measured.push_back(m);
  }
  for (size_t i = 0; i < bands; ++i) {
    Band band;
    band.up_to_bytes = whole_number(data, at++, 0x1p53, kTableName, "band size");
    band.family =
        static_cast<AllreduceFamily>(whole_number(data, at++, kAllreduceFamilies - 1, kTableName, "family"));
    band.in_place_family =
        static_cast<AllreduceFamily>(whole_number(data, at++, kAllreduceFamilies - 1, kTableName, "family"));
    MATEX_REQUIRE(table.bands.empty() || table.bands.back().up_to_bytes < band.up_to_bytes, MATEX_ERR_INTERNAL,
                  "a corrupt allreduce table arrived: bands out of order");
    MATEX_REQUIRE(band.in_place_family == band.family ||
                      (is_rail_family(band.family) && is_rail_family(band.in_place_family)),
                  MATEX_ERR_INTERNAL, "a corrupt allreduce table arrived: placement changes the family");
    table.bands.push_back(band);
  }
  return table;
}

std::string AllreduceTable::explain() const {
  const std::string origin =
      calibration_seconds < 0
          ? "from a tuning file (matex-tune; MATEX_CALIBRATE=auto or file): the slowest rank's median call"
          : "measured at init in " + microseconds(calibration_seconds) + ": the slowest rank's fastest timed call";
  std::string text = "allreduce under auto: " + origin +
                     (cores_shared ? " (some host has more ranks than cores)" : "") + "\n";
  // Columns: every family measured somewhere, out of place, then in place.
  struct Column {
    int family;
    bool in_place;
  };
  std::vector<Column> columns;
  for (bool in_place : {false, true}) {
    for (int f = 0; f < kAllreduceFamilies; ++f) {
      for (const Measurement& m : measured) {
        if (seconds_of(m, f, in_place) >= 0) {
          columns.push_back({f, in_place});
          break;
        }
      }
    }
  }
  static const char* kShort[kAllreduceFamilies] = {"flat", "small", "rail", "rs_ar_ag", "rs_ar_ag_cma"};
  char cell[64];
  std::snprintf(cell, sizeof cell, "  %12s", "bytes");
  text += cell;
  for (const Column& c : columns) {
    std::snprintf(cell, sizeof cell, " %15s", (std::string(kShort[c.family]) + (c.in_place ? " in" : "")).c_str());
    text += cell;
  }
  text += "\n";
  for (const Measurement& m : measured) {
    std::snprintf(cell, sizeof cell, "  %12s", with_unit(static_cast<double>(m.bytes)).c_str());
    text += cell;
    for (const Column& c : columns) {
      std::snprintf(cell, sizeof cell, " %15s", microseconds(seconds_of(m, c.family, c.in_place)).c_str());
      text += cell;
    }
    text += "\n";
  }
  text += "  (\"in\": in place; the others out of place)\n";
  text += "  choice (a family other than flat must be " + std::to_string(static_cast<int>(kMargin * 100)) +
          " % faster than flat; between sizes, log-log interpolation):\n";
  for (size_t i = 0; i < bands.size(); ++i) {
    const std::string range =
        band_range(i, bands.size(), i == 0 ? 0.0 : static_cast<double>(bands[i - 1].up_to_bytes),
                   static_cast<double>(bands[i].up_to_bytes));
    text += "    " + range + ": " + family_name(bands[i].family);
    if (bands[i].in_place_family != bands[i].family) {
      text += std::string("; in place ") + family_name(bands[i].in_place_family) +
              " (ranks of a node must agree on in place here)";
    }
    text += "\n";
  }
  if (past_largest) {
    text += "  past " + with_unit(static_cast<double>(measured.back().bytes)) + ", the largest size timed: " +
            family_name(*past_largest) + " (calls that fit the caches do not show where calls that stream "
            "from memory cross over)\n";
  }
  return text;
}

}  // namespace matexcomm
