// gpu_microbench_report.cc - see gpu_microbench_report.h.
#include "gpu_microbench_report.h"

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace matexbench {
namespace {

constexpr size_t kSummaryBytes = size_t{256} << 20;

double gbps(size_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : NAN; }
double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : NAN; }

std::string format(const char* pattern, ...) {
  char line[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(line, sizeof line, pattern, args);
  va_end(args);
  return line;
}

std::string size_label(size_t bytes) {
  if (bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

double min_host_copy_gbps(const SizeResults& r) {
  return std::fmin(gbps(r.bytes, r.host.d2h_seconds), gbps(r.bytes, r.host.h2d_seconds));
}

std::string staging_row(const SizeResults& r, const StagingTiming& s, const char* note) {
  const double rate = gbps(r.bytes, s.seconds);
  return format("%14zu %6s %6d %9s %11.1f %9.2f %14.1f %7llu  %s", r.bytes, size_label(s.chunk_bytes).c_str(), s.slots,
                s.step == StagingStep::kNothing ? "none" : "mpi_self", s.seconds * 1e6, rate,
                percent(rate, min_host_copy_gbps(r)), static_cast<unsigned long long>(s.wrong), note);
}

std::string pack_row(size_t bytes, const char* split, size_t tensors, const PackTiming& p, double d2d_gbps) {
  const double pack = gbps(bytes, p.pack_seconds);
  const double unpack = gbps(bytes, p.unpack_seconds);
  return format("%14zu %9s %8zu %10.1f %10.2f %10.1f %10.1f %12.2f %12.1f %7llu", bytes, split, tensors,
                p.pack_seconds * 1e6, pack, percent(pack, d2d_gbps), p.unpack_seconds * 1e6, unpack,
                percent(unpack, d2d_gbps), static_cast<unsigned long long>(p.wrong));
}

const SizeResults* find_size(const std::vector<SizeResults>& results, size_t bytes) {
  for (const SizeResults& r : results) {
    if (r.bytes == bytes) return &r;
  }
  return nullptr;
}

std::string json_number(double value) { return std::isfinite(value) ? format("%.6g", value) : "null"; }

}  // namespace

uint64_t SizeResults::wrong() const {
  uint64_t total = d2d.wrong + equal_pack.wrong + resnet50_pack.wrong + host.wrong + staging_mpi.wrong;
  for (const StagingTiming& s : staging) total += s.wrong;
  return total;
}

const StagingTiming& SizeResults::staging_default() const {
  for (const StagingTiming& s : staging) {
    if (s.chunk_bytes == kDefaultStagingChunkBytes && s.slots == kDefaultStagingSlots) return s;
  }
  return staging.at(0);  // not reached: the default configuration is always measured
}

const StagingTiming& SizeResults::staging_best() const {
  const StagingTiming* best = &staging.at(0);
  for (const StagingTiming& s : staging) {
    if (s.seconds < best->seconds) best = &s;
  }
  return *best;
}

std::vector<std::string> result_tables(const std::vector<SizeResults>& results) {
  std::vector<std::string> lines;
  lines.push_back("#");
  lines.push_back("# device-to-device cudaMemcpyAsync: GB/s = bytes copied (counted once, not read + write) / time");
  lines.push_back("#         bytes     time_us      GB/s  #wrong");
  for (const SizeResults& r : results)
    lines.push_back(format("%14zu %11.1f %9.2f %7llu", r.bytes, r.d2d.seconds * 1e6, gbps(r.bytes, r.d2d.seconds),
                           static_cast<unsigned long long>(r.d2d.wrong)));

  lines.push_back("#");
  lines.push_back("# batched pack into a fusion buffer / unpack out of it (launch_batched_copy, one call each) of the");
  lines.push_back("# same total: GB/s = total bytes / time; %d2d = that GB/s as % of the D2D copy's at the size");
  lines.push_back("#         bytes     split  tensors    pack_us  pack_GB/s  pack_%d2d  unpack_us  unpack_GB/s  "
                  "unpack_%d2d  #wrong");
  for (const SizeResults& r : results) {
    const double d2d = gbps(r.bytes, r.d2d.seconds);
    lines.push_back(pack_row(r.bytes, "equal", r.equal_tensors, r.equal_pack, d2d));
    lines.push_back(pack_row(r.bytes, "resnet50", r.resnet50_tensors, r.resnet50_pack, d2d));
  }

  lines.push_back("#");
  lines.push_back("# pinned host copies (cudaMemcpyAsync): D2H, H2D, and both at once on two streams (both: the size");
  lines.push_back("# each way; GB/s per direction = size / time, total = 2 x size / time)");
  lines.push_back("#         bytes      d2h_us  d2h_GB/s      h2d_us  h2d_GB/s     both_us  both_GB/s_each  "
                  "both_GB/s_total  #wrong");
  for (const SizeResults& r : results) {
    const double both = gbps(r.bytes, r.host.both_seconds);
    lines.push_back(format("%14zu %11.1f %9.2f %11.1f %9.2f %11.1f %15.2f %16.2f %7llu", r.bytes,
                           r.host.d2h_seconds * 1e6, gbps(r.bytes, r.host.d2h_seconds), r.host.h2d_seconds * 1e6,
                           gbps(r.bytes, r.host.h2d_seconds), r.host.both_seconds * 1e6, both, 2 * both,
                           static_cast<unsigned long long>(r.host.wrong)));
  }

  lines.push_back("#");
  lines.push_back("# host staging pipeline (HostStagingPipeline::run: D2H, host step, H2D per chunk) over a device");
  lines.push_back("# buffer: GB/s = buffer bytes / time; %min = that GB/s as % of min(D2H, H2D) GB/s at the size.");
  lines.push_back("# step none: does nothing; mpi_self: MPI_Allreduce in place over MPI_COMM_SELF (a no-op)");
  lines.push_back("#         bytes  chunk  slots      step     time_us      GB/s           %min  #wrong  note");
  for (const SizeResults& r : results) {
    const StagingTiming* defaults = &r.staging_default();
    const StagingTiming* best = &r.staging_best();
    for (const StagingTiming& s : r.staging) {
      const char* note = &s == defaults ? (&s == best ? "default, best" : "default") : (&s == best ? "best" : "");
      lines.push_back(staging_row(r, s, note));
    }
    lines.push_back(staging_row(r, r.staging_mpi, "default"));
  }

  lines.push_back("#");
  lines.push_back(format("# staging, the library's default (%s x %d slots) against the best chunk x slots above",
                         size_label(kDefaultStagingChunkBytes).c_str(), kDefaultStagingSlots));
  lines.push_back("#         bytes  default_GB/s  default_%min  best_chunk  best_slots  best_GB/s  best_%min  "
                  "default_mpi_self_GB/s");
  for (const SizeResults& r : results) {
    const double defaults = gbps(r.bytes, r.staging_default().seconds);
    const double best = gbps(r.bytes, r.staging_best().seconds);
    const double floor = min_host_copy_gbps(r);
    lines.push_back(format("%14zu %13.2f %13.1f %11s %11d %10.2f %10.1f %22.2f", r.bytes, defaults,
                           percent(defaults, floor), size_label(r.staging_best().chunk_bytes).c_str(),
                           r.staging_best().slots, best, percent(best, floor),
                           gbps(r.bytes, r.staging_mpi.seconds)));
  }
  return lines;
}

std::vector<std::string> summary_lines(const std::vector<SizeResults>& results) {
  uint64_t wrong = 0;
  for (const SizeResults& r : results) wrong += r.wrong();
  double pack = NAN, unpack = NAN, staging_pct = NAN, d2d = NAN, d2h = NAN, h2d = NAN, staging = NAN;
  if (const SizeResults* r = find_size(results, kSummaryBytes)) {
    d2d = gbps(r->bytes, r->d2d.seconds);
    pack = percent(gbps(r->bytes, r->equal_pack.pack_seconds), d2d);
    unpack = percent(gbps(r->bytes, r->equal_pack.unpack_seconds), d2d);
    d2h = gbps(r->bytes, r->host.d2h_seconds);
    h2d = gbps(r->bytes, r->host.h2d_seconds);
    staging = gbps(r->bytes, r->staging_default().seconds);
    staging_pct = percent(staging, min_host_copy_gbps(*r));
  }
  return {"# SUMMARY at 256 MiB (nan: not measured): pack/unpack of the equal split, staging with the default "
          "chunk x slots and a step that does nothing, wrong over every check",
          format("SUMMARY pack_pct_of_d2d_at_256MiB=%.2f unpack_pct_of_d2d_at_256MiB=%.2f "
                 "staging_pct_of_min_d2h_h2d_at_256MiB=%.2f d2d_GBps_at_256MiB=%.2f d2h_GBps_at_256MiB=%.2f "
                 "h2d_GBps_at_256MiB=%.2f staging_GBps_at_256MiB=%.2f wrong=%llu",
                 pack, unpack, staging_pct, d2d, d2h, h2d, staging, static_cast<unsigned long long>(wrong))};
}

std::string write_gpu_microbench_json(const std::string& path, const std::string& device,
                                      const std::vector<SizeResults>& results) {
  std::ostringstream out;
  std::string escaped;
  for (char c : device) escaped += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  out << "{\n  \"device\": \"" << escaped << "\",\n  \"gb_per_s\": \"1e9 bytes/s, bytes moved counted once\",\n"
      << "  \"repetitions\": {\"warmup\": " << kWarmupRepetitions << ", \"timed\": " << kTimedRepetitions
      << ", \"statistic\": \"median\"},\n  \"sizes\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const SizeResults& r = results[i];
    out << (i ? ",\n" : "\n") << "    {\"bytes\": " << r.bytes
        << ", \"d2d_gbps\": " << json_number(gbps(r.bytes, r.d2d.seconds))
        << ", \"pack_equal_gbps\": " << json_number(gbps(r.bytes, r.equal_pack.pack_seconds))
        << ", \"unpack_equal_gbps\": " << json_number(gbps(r.bytes, r.equal_pack.unpack_seconds))
        << ", \"pack_resnet50_gbps\": " << json_number(gbps(r.bytes, r.resnet50_pack.pack_seconds))
        << ", \"unpack_resnet50_gbps\": " << json_number(gbps(r.bytes, r.resnet50_pack.unpack_seconds))
        << ", \"d2h_gbps\": " << json_number(gbps(r.bytes, r.host.d2h_seconds))
        << ", \"h2d_gbps\": " << json_number(gbps(r.bytes, r.host.h2d_seconds))
        << ", \"both_gbps_each\": " << json_number(gbps(r.bytes, r.host.both_seconds))
        << ", \"staging_mpi_self_gbps\": " << json_number(gbps(r.bytes, r.staging_mpi.seconds)) << ", \"staging\": [";
    for (size_t k = 0; k < r.staging.size(); ++k) {
      const StagingTiming& s = r.staging[k];
      out << (k ? ", " : "") << "{\"chunk_bytes\": " << s.chunk_bytes << ", \"slots\": " << s.slots
          << ", \"gbps\": " << json_number(gbps(r.bytes, s.seconds)) << "}";
    }
    out << "], \"wrong\": " << r.wrong() << "}";
  }
  out << "\n  ],\n  \"summary\": \"" << summary_lines(results).back() << "\"\n}\n";
  std::ofstream file(path);
  if (!file) return "--json " + path + ": cannot open for writing: " + std::strerror(errno);
  file << out.str();
  file.close();
  if (!file) return "--json " + path + ": write failed";
  return "";
}

}  // namespace matexbench
