// report_format.cc - text table and JSON rendering of the matex-topo report.
#include "report_format.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>

namespace matexcomm::topo {

namespace {

std::string counted(int count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string joined(const std::vector<int>& values) {
  std::string text;
  for (int value : values) text += (text.empty() ? "" : ",") + std::to_string(value);
  return text;
}

std::string device_names(const std::vector<PciDevice>& devices) {
  if (devices.empty()) return {};
  std::string text = " (";
  for (size_t i = 0; i < devices.size(); ++i) text += (i ? ", " : "") + devices[i].name;
  return text + ")";
}

std::vector<std::string> cells_of(const RankReport& r) {
  return {std::to_string(r.rank), std::to_string(r.node), std::to_string(r.local_rank),
          std::to_string(r.local_size), r.host, r.bound_cores, r.numa, r.thread_cpus, r.threads,
          r.nearest_gpu};
}

void print_devices_json(std::ostream& out, const std::vector<PciDevice>& devices) {
  out << '[';
  for (size_t i = 0; i < devices.size(); ++i) {
    const PciDevice& d = devices[i];
    out << (i ? "," : "") << "{\"kind\":" << json_quoted(d.kind) << ",\"name\":" << json_quoted(d.name)
        << ",\"bus_id\":" << json_quoted(d.bus_id) << ",\"local_cpus\":" << json_quoted(d.local_cpus)
        << ",\"numa_node\":" << d.numa_node << '}';
  }
  out << ']';
}

}  // namespace

std::string json_quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through unchanged
        }
    }
  }
  return out + "\"";
}

void print_text_report(std::ostream& out, const JobSummary& job, const std::vector<RankReport>& ranks) {
  const HardwareInfo& m = job.machine;
  out << "matex-topo: " << counted(job.world_size, "rank") << " on " << counted(job.node_count, "node")
      << " (" << (job.virtual_nodes ? "virtual nodes from MATEX_VIRTUAL_NODES" : "grouped by host id")
      << "), ranks per node: " << joined(job.node_sizes) << '\n';
  out << "machine of rank 0: " << counted(m.packages, "package") << ", "
      << counted(m.numa_nodes, "NUMA node") << ", " << counted(m.cores, "core") << ", "
      << counted(m.pus, "PU") << ", " << counted(static_cast<int>(m.gpus.size()), "GPU")
      << device_names(m.gpus) << ", " << counted(static_cast<int>(m.nics.size()), "NIC")
      << device_names(m.nics) << "\n\n";

  const std::vector<std::string> headers = {"rank", "node", "local_rank", "local_size",
                                            "host", "bound_cores", "numa", "thread_cpus", "threads",
                                            "nearest_gpu"};
  const size_t numeric_columns = 4;  // right-aligned
  std::vector<size_t> widths;
  for (const std::string& header : headers) widths.push_back(header.size());
  for (const RankReport& report : ranks) {
    std::vector<std::string> cells = cells_of(report);
    for (size_t c = 0; c < cells.size(); ++c) widths[c] = std::max(widths[c], cells[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      if (c > 0) out << "  ";
      if (c < numeric_columns) {
        out << std::right << std::setw(static_cast<int>(widths[c])) << cells[c];
      } else if (last) {
        out << cells[c];
      } else {
        out << std::left << std::setw(static_cast<int>(widths[c])) << cells[c];
      }
    }
    out << std::right << '\n';
  };
  print_row(headers);
  for (const RankReport& report : ranks) print_row(cells_of(report));
}

void print_json_report(std::ostream& out, const JobSummary& job, const std::vector<RankReport>& ranks) {
  const HardwareInfo& m = job.machine;
  out << "{\"world_size\":" << job.world_size << ",\"node_count\":" << job.node_count
      << ",\"virtual_nodes\":" << (job.virtual_nodes ? "true" : "false") << ",\"node_sizes\":["
      << joined(job.node_sizes) << "],\n \"ranks\":[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankReport& r = ranks[i];
    out << (i ? ",\n  " : "\n  ") << "{\"rank\":" << r.rank << ",\"node\":" << r.node
        << ",\"local_rank\":" << r.local_rank << ",\"local_size\":" << r.local_size
        << ",\"host\":" << json_quoted(r.host) << ",\"bound_cores\":" << json_quoted(r.bound_cores)
        << ",\"numa\":" << json_quoted(r.numa) << ",\"thread_cpus\":" << json_quoted(r.thread_cpus)
        << ",\"threads\":" << json_quoted(r.threads) << ",\"nearest_gpu\":" << json_quoted(r.nearest_gpu)
        << '}';
  }
  out << "],\n \"machine\":{\"packages\":" << m.packages << ",\"numa_nodes\":" << m.numa_nodes
      << ",\"cores\":" << m.cores << ",\"pus\":" << m.pus << ",\"gpus\":";
  print_devices_json(out, m.gpus);
  out << ",\"nics\":";
  print_devices_json(out, m.nics);
  out << "}}\n";
}

}  // namespace matexcomm::topo
