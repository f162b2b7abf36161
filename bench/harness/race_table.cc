// race_table.cc - see race_table.h.
#include "race_table.h"

#include <cstdio>

#include "element_codec.h"

namespace matexbench {
namespace {

constexpr double kWithin = 1.10;  // auto counts as the fastest choice within 10 %

std::string time_cell(double us) {
  char text[32];
  if (us < 0) std::snprintf(text, sizeof text, "%13s", "-");
  else std::snprintf(text, sizeof text, "%13.1f", us);
  return text;
}

}  // namespace

std::vector<std::string> race_table(const std::vector<std::string>& forced, const std::vector<ResultRow>& rows) {
  std::vector<std::string> lines = {"#", "# auto against every forced algorithm and MPI, same buffers, interleaved call "
                                         "by call (us per call; -: does not run as itself here)"};
  char text[160];
  std::snprintf(text, sizeof text, "# %10s  %-7s  %-6s%13s  %-12s  ", "bytes", "type", "place", "auto", "auto algo");
  std::string header = text;
  for (const std::string& name : forced) {
    std::snprintf(text, sizeof text, "%13.12s", name.c_str());
    header += text;
  }
  std::snprintf(text, sizeof text, "%13s  %-12s  %s", "mpi", "fastest", "auto/fastest");
  header += text;
  lines.push_back(header);
  double worst = 0.0;
  std::string worst_where;
  for (const ResultRow& row : rows) {
    for (int placement = 0; placement < 2; ++placement) {
      if (!row.has[placement]) continue;
      const Measurement& m = row.result[placement];
      double best = m.mpi_time_us >= 0 ? m.mpi_time_us : -1.0;
      std::string best_name = "mpi";
      std::snprintf(text, sizeof text, "  %10zu  %-7s  %-6s%s  %-12.12s  ", row.bytes, matex_dtype_name(row.dtype),
                    placement ? "in" : "out", time_cell(m.time_us).c_str(), m.algorithm.c_str());
      std::string line = text;
      for (size_t i = 0; i < forced.size() && i < m.forced_time_us.size(); ++i) {
        const double us = m.forced_time_us[i];
        line += time_cell(us);
        if (us >= 0 && (best < 0 || us < best)) best = us, best_name = forced[i];
      }
      line += time_cell(m.mpi_time_us);
      const double ratio = best > 0 ? m.time_us / best : 0.0;
      std::snprintf(text, sizeof text, "  %-12.12s  %5.2f%s", best_name.c_str(), ratio,
                    ratio > kWithin ? "  (over 10 %)" : "");
      line += text;
      lines.push_back(line);
      if (ratio > worst) {
        worst = ratio;
        worst_where = std::to_string(row.bytes) + " B " + (placement ? "in place" : "out of place");
      }
    }
  }
  std::snprintf(text, sizeof text, "# worst auto/fastest: %.2f (%s)", worst, worst_where.c_str());
  lines.push_back(text);
  return lines;
}

}  // namespace matexbench
