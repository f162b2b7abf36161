// rank_report.cc - encoding and gathering of matex-topo's per-rank lines.
//
// Records have no fixed size (host ids and CPU lists can be long), so rank 0
// first gathers the lengths, then the bytes with MPI_Gatherv.
#include "rank_report.h"

#include <climits>
#include <cstdint>

#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm::topo {

namespace {

void put_field(std::string& out, const std::string& value) {
  out += std::to_string(value.size());
  out += ':';
  out += value;
}

class FieldReader {
 public:
  explicit FieldReader(const std::string& bytes) : bytes_(bytes) {}

  std::string next_string() {
    size_t colon = bytes_.find(':', at_);
    MATEX_REQUIRE(colon != std::string::npos, MATEX_ERR_INTERNAL, "matex-topo: truncated rank report");
    size_t length = std::stoul(bytes_.substr(at_, colon - at_));
    MATEX_REQUIRE(colon + 1 + length <= bytes_.size(), MATEX_ERR_INTERNAL,
                  "matex-topo: rank report field runs past its end");
    std::string value = bytes_.substr(colon + 1, length);
    at_ = colon + 1 + length;
    return value;
  }
  int next_int() { return std::stoi(next_string()); }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::string encode_report(const RankReport& report) {
  std::string out;
  for (int value : {report.rank, report.node, report.local_rank, report.local_size}) {
    put_field(out, std::to_string(value));
  }
  for (const std::string* text : {&report.host, &report.bound_cores, &report.numa, &report.nearest_gpu,
                                  &report.thread_cpus, &report.threads}) {
    put_field(out, *text);
  }
  return out;
}

RankReport decode_report(const std::string& bytes) {
  FieldReader reader(bytes);
  RankReport report;
  report.rank = reader.next_int();
  report.node = reader.next_int();
  report.local_rank = reader.next_int();
  report.local_size = reader.next_int();
  report.host = reader.next_string();
  report.bound_cores = reader.next_string();
  report.numa = reader.next_string();
  report.nearest_gpu = reader.next_string();
  report.thread_cpus = reader.next_string();
  report.threads = reader.next_string();
  return report;
}

std::vector<RankReport> gather_reports(MPI_Comm comm, int root, const RankReport& mine) {
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::string encoded = encode_report(mine);
  MATEX_REQUIRE(encoded.size() <= INT_MAX, MATEX_ERR_INTERNAL, "matex-topo: rank report too long");
  int length = static_cast<int>(encoded.size());

  std::vector<int> lengths(rank == root ? size : 0);
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm),
            "MPI_Gather (report lengths)");
  std::vector<int> offsets(lengths.size());
  int64_t total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
    MATEX_REQUIRE(total <= INT_MAX, MATEX_ERR_INTERNAL, "matex-topo: reports too long to gather");
  }
  std::string all(static_cast<size_t>(total), '\0');
  check_mpi(MPI_Gatherv(encoded.data(), length, MPI_CHAR, all.data(), lengths.data(),
                        offsets.data(), MPI_CHAR, root, comm),
            "MPI_Gatherv (reports)");

  std::vector<RankReport> reports;
  for (size_t r = 0; r < lengths.size(); ++r) {
    reports.push_back(decode_report(all.substr(offsets[r], lengths[r])));
  }
  return reports;
}

}  // namespace matexcomm::topo
