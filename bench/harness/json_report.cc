// json_report.cc - see json_report.h.
#include "json_report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "collective_descriptor.h"
#include "element_codec.h"

namespace matexbench {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

void write_record(std::ostream& out, const ResultRow& row, int placement, const RunContext& context) {
  const Options& options = *context.options;
  const Measurement& m = row.result[placement];
  const double algbw = algbw_gbps(row.bytes, m.time_us);
  const double factor = descriptor_of(options.coll).bus_factor(context.layout->world_size);
  out << "    {\"size\": " << row.bytes << ", \"count\": " << row.count << ", \"type\": " << quoted(matex_dtype_name(row.dtype))
      << ", \"redop\": " << quoted(row.redop) << ", \"root\": " << row.root
      << ", \"inplace\": " << (placement ? "true" : "false") << ", \"time_us\": " << number(m.time_us)
      << ", \"algbw\": " << number(algbw) << ", \"busbw\": " << number(algbw * factor)
      << ", \"wrong\": " << (m.checked ? std::to_string(m.wrong) : "null") << ", \"algo\": " << quoted(m.algorithm);
  if (options.compare_mpi) {
    out << ", \"mpi_time_us\": " << number(m.mpi_time_us)
        << ", \"mpi_busbw\": " << number(algbw_gbps(row.bytes, m.mpi_time_us) * factor)
        << ", \"speedup\": " << number(m.time_us > 0 ? m.mpi_time_us / m.time_us : NAN)
        << ", \"mpi_wrong\": " << (m.checked ? std::to_string(m.mpi_wrong) : "null");
  }
  if (context.forced_algorithms != nullptr) {  // --compare all; null where one did not run as itself
    out << ", \"forced_time_us\": {";
    for (size_t i = 0; i < context.forced_algorithms->size() && i < m.forced_time_us.size(); ++i) {
      const double us = m.forced_time_us[i];
      out << (i ? ", " : "") << quoted((*context.forced_algorithms)[i]) << ": " << (us < 0 ? "null" : number(us));
    }
    out << "}";
  }
  out << "}";
}

// Writes a finished document to the -J file; returns "" or an error naming it.
std::string write_document(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  if (!file) return "-J " + path + ": cannot open for writing: " + std::strerror(errno);
  file << text;
  file.close();
  if (!file) return "-J " + path + ": write failed";
  return "";
}

}  // namespace

std::string write_json_report(const std::string& path, const RunContext& context, const std::vector<ResultRow>& rows) {
  const Options& options = *context.options;
  std::ostringstream out;
  out << "{\n  \"memcpy_gbps\": " << number(context.memcpy_gbps) << ",\n  \"rank_latency_us\": "
      << (context.rank_latency_us >= 0 ? number(context.rank_latency_us) : std::string("null"))
      << ",\n  \"command\": " << quoted(options.command_line)
      << ",\n  \"matexcomm_version\": " << quoted(matex_version_string())
      << ",\n  \"mpi_library\": " << quoted(mpi_library_version())
      << ",\n  \"world_size\": " << context.layout->world_size << ",\n  \"node_count\": " << context.layout->node_count()
      << ",\n  \"layout\": " << quoted(context.layout->sizes()) << ",\n  \"coll\": " << quoted(collective_name(options.coll))
      << ",\n  \"algo_requested\": " << quoted(options.algorithm) << ",\n  \"compare\": "
      << (options.compare_algorithms ? "\"all\"" : options.compare_mpi ? "\"mpi\"" : "null");
  if (context.device != nullptr) {  // --mem cuda only: host runs keep their document as it was
    out << ",\n  \"memory\": \"cuda\"";
    if (options.compare_mpi)
      out << ",\n  \"mpi_buffers\": "
          << (context.device->mpi_takes_device_buffers() ? "\"device\"" : "\"staged_pageable_host\"");
  }
  out << ",\n  \"results\": [";
  bool first = true;
  for (const ResultRow& row : rows) {
    for (int placement = 0; placement < 2; ++placement) {
      if (!row.has[placement]) continue;
      out << (first ? "\n" : ",\n");
      first = false;
      write_record(out, row, placement, context);
    }
  }
  out << "\n  ]\n}\n";
  return write_document(path, out.str());
}

std::string write_workload_json(const std::string& path, const RunContext& context, const WorkloadResult& r) {
  const Options& options = *context.options;
  std::ostringstream out;
  out << "{\n  \"memcpy_gbps\": " << number(context.memcpy_gbps) << ",\n  \"command\": " << quoted(options.command_line)
      << ",\n  \"matexcomm_version\": " << quoted(matex_version_string())
      << ",\n  \"world_size\": " << context.layout->world_size << ",\n  \"layout\": " << quoted(context.layout->sizes())
      << ",\n  \"workload\": " << quoted(options.workload) << ",\n  \"tensors_per_step\": " << r.tensors
      << ",\n  \"elements_per_step\": " << r.elements << ",\n  \"steps\": " << options.iterations
      << ",\n  \"step_us\": " << number(r.step_us) << ",\n  \"single_allreduce_us\": " << number(r.single_allreduce_us)
      << ",\n  \"ratio\": " << number(r.ratio) << ",\n  \"tensors_per_second\": " << number(r.tensors_per_second)
      << ",\n  \"idle_cycle_coordination_us\": " << number(r.idle_coordination_us)
      << ",\n  \"idle_cycle_first_rank_us\": " << number(r.idle_coordination_max_us)
      << ",\n  \"cached_cycles\": " << r.cached_cycles << ",\n  \"full_cycles\": " << r.full_cycles
      << ",\n  \"fused_responses\": " << r.fused_responses << ",\n  \"wrong\": " << r.wrong << "\n}\n";
  return write_document(path, out.str());
}

}  // namespace matexbench
