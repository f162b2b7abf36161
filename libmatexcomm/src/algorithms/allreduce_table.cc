// allreduce_table.cc - size bands from measured allreduce times (see allreduce_table.h).
//
// Cost: building evaluates the model at every power of two from 1 B to
// 2^kLargestPower bytes (three families, a few logs each): microseconds, once
// per layout. A lookup walks the bands (a handful).
// Preconditions: measurements sorted by size, flat measured at every size.
#include "algorithms/allreduce_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace matexcomm {

namespace {

constexpr int kLargestPower = 40;  // bands are drawn up to 1 TiB; the last one covers the rest
constexpr double kVersion = 1;
constexpr size_t kHeader = 5;  // version, measurements, bands, calibration seconds, cores shared

std::string with_unit(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g %s", bytes, units[unit]);
  return text;
}

std::string microseconds(double seconds) {
  if (seconds < 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

}  // namespace

const char* family_name(AllreduceFamily family) {
  switch (family) {
    case AllreduceFamily::kFlat: return "flat";
    case AllreduceFamily::kSmall: return "small (oneshot / rab)";
    case AllreduceFamily::kRail: return "rail (rs_ar_ag / rs_ar_ag_cma)";
  }
  return "?";
}

double AllreduceTable::predicted_seconds(AllreduceFamily family, size_t bytes) const {
  const int f = static_cast<int>(family);
  std::vector<const Measurement*> points;
  for (const Measurement& m : measured) {
    if (m.seconds[f] > 0) points.push_back(&m);
  }
  if (points.empty()) return -1;
  const double s = static_cast<double>(bytes);
  const Measurement& first = *points.front();
  const Measurement& last = *points.back();
  if (s <= static_cast<double>(first.bytes)) return first.seconds[f];
  if (s > static_cast<double>(last.bytes)) {
    // Only the families measured at the largest size extend past it: a family
    // timed at small sizes alone says nothing of large ones.
    if (last.bytes != measured.back().bytes) return -1;
    if (points.size() < 2) return last.seconds[f] * s / static_cast<double>(last.bytes);
    const Measurement& before = *points[points.size() - 2];
    const double slope = (last.seconds[f] - before.seconds[f]) / static_cast<double>(last.bytes - before.bytes);
    return last.seconds[f] + (s - static_cast<double>(last.bytes)) * std::max(slope, 0.0);
  }
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const Measurement& a = *points[i];
    const Measurement& b = *points[i + 1];
    if (s > static_cast<double>(b.bytes)) continue;
    const double x = std::log(s / static_cast<double>(a.bytes)) /
                     std::log(static_cast<double>(b.bytes) / static_cast<double>(a.bytes));
    return std::exp(std::log(a.seconds[f]) + x * (std::log(b.seconds[f]) - std::log(a.seconds[f])));
  }
  return last.seconds[f];
}

AllreduceTable AllreduceTable::from_measurements(std::vector<Measurement> measurements, double calibration_seconds,
                                                 bool cores_shared) {
  MATEX_REQUIRE(!measurements.empty(), MATEX_ERR_INTERNAL, "an allreduce table needs at least one measurement");
  AllreduceTable table;
  table.measured = std::move(measurements);
  table.calibration_seconds = calibration_seconds;
  table.cores_shared = cores_shared;
  for (int power = 0; power <= kLargestPower; ++power) {
    const size_t bytes = size_t{1} << power;
    const double flat = table.predicted_seconds(AllreduceFamily::kFlat, bytes);
    AllreduceFamily best = AllreduceFamily::kFlat;
    double best_seconds = flat;
    for (AllreduceFamily other : {AllreduceFamily::kSmall, AllreduceFamily::kRail}) {
      const double seconds = table.predicted_seconds(other, bytes);
      if (seconds <= 0) continue;
      const bool beats_flat = flat <= 0 || seconds < flat * (1 - kMargin);
      if (beats_flat && (best == AllreduceFamily::kFlat || seconds < best_seconds)) {
        best = other;
        best_seconds = seconds;
      }
    }
    if (!table.bands.empty() && table.bands.back().family == best) {
      table.bands.back().up_to_bytes = bytes;
    } else {
      table.bands.push_back({bytes, best});
    }
  }
  return table;
}

AllreduceFamily AllreduceTable::family_for(size_t bytes) const {
  for (const Band& band : bands) {
    if (bytes <= band.up_to_bytes) return band.family;
  }
  return bands.empty() ? AllreduceFamily::kFlat : bands.back().family;
}

size_t AllreduceTable::serialized_capacity(size_t max_measurements) {
  return kHeader + max_measurements * (1 + kAllreduceFamilies) + 2 * (kLargestPower + 1);
}

std::vector<double> AllreduceTable::serialize() const {
  std::vector<double> data = {kVersion, static_cast<double>(measured.size()), static_cast<double>(bands.size()),
                              calibration_seconds, cores_shared ? 1.0 : 0.0};
  for (const Measurement& m : measured) {
    data.push_back(static_cast<double>(m.bytes));
    for (double seconds : m.seconds) data.push_back(seconds);
  }
  for (const Band& band : bands) {
    data.push_back(static_cast<double>(band.up_to_bytes));
    data.push_back(static_cast<double>(band.family));
  }
  return data;
}

namespace {

// data[at] as a whole number in [0, limit], or a MATEX_ERR_INTERNAL naming `what`.
uint64_t whole(const std::vector<double>& data, size_t at, double limit, const char* what) {
  const double value = at < data.size() ? data[at] : -1;
  MATEX_REQUIRE(std::isfinite(value) && value >= 0 && value <= limit && value == std::floor(value),
                MATEX_ERR_INTERNAL, std::string("a corrupt allreduce table arrived: ") + what);
  return static_cast<uint64_t>(value);
}

}  // namespace

AllreduceTable AllreduceTable::deserialize(const std::vector<double>& data) {
  MATEX_REQUIRE(data.size() >= kHeader && data[0] == kVersion, MATEX_ERR_INTERNAL,
                "an allreduce table of another version or none arrived");
  AllreduceTable table;
  const size_t measurements = whole(data, 1, static_cast<double>(data.size()), "measurement count");
  const size_t bands = whole(data, 2, kLargestPower + 1, "band count");
  MATEX_REQUIRE(bands >= 1 && data.size() >= kHeader + measurements * (1 + kAllreduceFamilies) + 2 * bands,
                MATEX_ERR_INTERNAL, "a truncated allreduce table arrived");
  table.calibration_seconds = data[3];
  table.cores_shared = data[4] != 0;
  size_t at = kHeader;
  for (size_t i = 0; i < measurements; ++i) {
    Measurement m;
    m.bytes = whole(data, at++, 0x1p53, "size");
    for (double& seconds : m.seconds) {
      seconds = data[at++];
      MATEX_REQUIRE(std::isfinite(seconds), MATEX_ERR_INTERNAL, "a corrupt allreduce table arrived: time");
    }
    table.measured.push_back(m);
  }
  for (size_t i = 0; i < bands; ++i) {
    Band band;
    band.up_to_bytes = whole(data, at++, 0x1p53, "band size");
    band.family = static_cast<AllreduceFamily>(whole(data, at++, kAllreduceFamilies - 1, "family"));
    MATEX_REQUIRE(table.bands.empty() || table.bands.back().up_to_bytes < band.up_to_bytes, MATEX_ERR_INTERNAL,
                  "a corrupt allreduce table arrived: bands out of order");
    table.bands.push_back(band);
  }
  return table;
}

std::string AllreduceTable::explain() const {
  std::string text = "allreduce under auto: measured at init in " + microseconds(calibration_seconds) +
                     (cores_shared ? " (some node has more ranks than cores)" : "") +
                     "; the slowest rank's faster of 2 calls, out of place\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %12s %14s %14s %14s\n", "bytes", "flat", "small", "rail");
  text += line;
  for (const Measurement& m : measured) {
    std::snprintf(line, sizeof line, "  %12s %14s %14s %14s\n", with_unit(static_cast<double>(m.bytes)).c_str(),
                  microseconds(m.seconds[0]).c_str(), microseconds(m.seconds[1]).c_str(),
                  microseconds(m.seconds[2]).c_str());
    text += line;
  }
  text += "  choice (a family other than flat must be " + std::to_string(static_cast<int>(kMargin * 100)) +
          " % faster than flat; between sizes, log-log interpolation):\n";
  for (size_t i = 0; i < bands.size(); ++i) {
    const std::string above = i == 0 ? "" : "above " + with_unit(static_cast<double>(bands[i - 1].up_to_bytes));
    const std::string up_to = "up to " + with_unit(static_cast<double>(bands[i].up_to_bytes));
    const std::string range = bands.size() == 1         ? "every size"
                              : i == 0                  ? up_to
                              : i + 1 == bands.size()   ? above
                                                        : above + ", " + up_to;
    text += "    " + range + ": " + family_name(bands[i].family) + "\n";
  }
  return text;
}

}  // namespace matexcomm
