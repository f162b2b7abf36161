// result_table.cc - see result_table.h.
#include "result_table.h"

#include <cstdio>

#include "collective_descriptor.h"
#include "element_codec.h"

namespace matexbench {
namespace {

// Right-aligns `text` in `width` columns, after a two-space gap.
void cell(std::string* line, int width, const std::string& text) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "  %*s", width, text.c_str());
  *line += buffer;
}

std::string fixed(double value, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

constexpr int kTime = 10, kBw = 7, kWrong = 6, kSpeedup = 7;

}  // namespace

ResultTable::ResultTable(matex_collective_t coll, int world_size, bool compare_mpi, bool check)
    : coll_(coll), world_size_(world_size), compare_mpi_(compare_mpi), check_(check) {}

std::vector<std::string> ResultTable::header() const {
  const int placement_width = 2 * 4 + kTime + 2 * kBw + kWrong + (compare_mpi_ ? 4 + kTime + kSpeedup : 0);
  std::string groups = "#" + std::string(2 * 5 + 10 + 12 + 8 + 6 + 6, ' ');  // over size .. root
  for (const char* title : {"out-of-place", "in-place"}) {
    std::string name(title);
    const int pad = (placement_width - static_cast<int>(name.size())) / 2;
    groups += std::string(pad, ' ') + name + std::string(placement_width - pad - name.size(), ' ');
  }
  std::string names = "#", units = "#";
  cell(&names, 10, "size");
  cell(&names, 12, "count");
  cell(&names, 8, "type");
  cell(&names, 6, "redop");
  cell(&names, 6, "root");
  cell(&units, 10, "(B)");
  cell(&units, 12, "(elements)");
  units += std::string(2 * 3 + 8 + 6 + 6, ' ');
  for (int placement = 0; placement < 2; ++placement) {
    cell(&names, kTime, "time");
    cell(&names, kBw, "algbw");
    cell(&names, kBw, "busbw");
    cell(&names, kWrong, "#wrong");
    cell(&units, kTime, "(us)");
    cell(&units, kBw, "(GB/s)");
    cell(&units, kBw, "(GB/s)");
    cell(&units, kWrong, "");
    if (compare_mpi_) {
      cell(&names, kTime, "mpi_time");
      cell(&names, kSpeedup, "speedup");
      cell(&units, kTime, "(us)");
      cell(&units, kSpeedup, "(x)");
    }
  }
  names += "  algo";
  for (std::string* line : {&groups, &names, &units}) line->erase(line->find_last_not_of(' ') + 1);
  return {groups, names, units};
}

std::vector<std::string> ResultTable::format(const ResultRow& row) {
  std::string line = " ";
  cell(&line, 10, std::to_string(row.bytes));
  cell(&line, 12, std::to_string(row.count));
  cell(&line, 8, matex_dtype_name(row.dtype));
  cell(&line, 6, row.redop);
  cell(&line, 6, std::to_string(row.root));
  std::vector<std::string> notes;
  std::string algorithm;
  const double factor = descriptor_of(coll_).bus_factor(world_size_);
  for (int placement = 0; placement < 2; ++placement) {
    if (!row.has[placement]) {
      for (int width : {kTime, kBw, kBw, kWrong}) cell(&line, width, "N/A");
      if (compare_mpi_) cell(&line, kTime, "N/A"), cell(&line, kSpeedup, "N/A");
      continue;
    }
    const Measurement& m = row.result[placement];
    const double algbw = algbw_gbps(row.bytes, m.time_us);
    cell(&line, kTime, fixed(m.time_us, 2));
    cell(&line, kBw, fixed(algbw, 2));
    cell(&line, kBw, fixed(algbw * factor, 2));
    cell(&line, kWrong, m.checked ? std::to_string(m.wrong) : "N/A");
    busbw_sum_ += algbw * factor;
    ++busbw_count_;
    wrong_total_ += m.wrong + m.mpi_wrong;
    if (compare_mpi_) {
      cell(&line, kTime, fixed(m.mpi_time_us, 2));
      cell(&line, kSpeedup, m.time_us > 0 ? fixed(m.mpi_time_us / m.time_us, 2) : "N/A");
      mpi_busbw_sum_ += algbw_gbps(row.bytes, m.mpi_time_us) * factor;
      if (m.mpi_wrong > 0)
        notes.push_back("# ^ the MPI baseline gave " + std::to_string(m.mpi_wrong) + " wrong values (" +
                        (placement ? "in-place" : "out-of-place") + ")");
    }
    if (algorithm.empty()) algorithm = m.algorithm;
    else if (algorithm != m.algorithm) algorithm += "/" + m.algorithm;
  }
  line += "  " + algorithm;
  notes.insert(notes.begin(), line);
  return notes;
}

std::vector<std::string> ResultTable::footer() const {
  char buffer[128];
  std::vector<std::string> lines;
  std::snprintf(buffer, sizeof buffer, "# Out of bounds values : %llu %s%s",
                static_cast<unsigned long long>(wrong_total_), failed() ? "FAILED" : "OK",
                check_ ? "" : " (not checked: -c 0)");
  lines.push_back(buffer);
  const double average = busbw_count_ ? busbw_sum_ / busbw_count_ : 0.0;
  std::snprintf(buffer, sizeof buffer, "# Avg bus bandwidth    : %g", average);
  lines.push_back(buffer);
  if (compare_mpi_) {
    std::snprintf(buffer, sizeof buffer, "# Avg MPI bus bandwidth: %g", busbw_count_ ? mpi_busbw_sum_ / busbw_count_ : 0.0);
    lines.push_back(buffer);
  }
  return lines;
}

}  // namespace matexbench
