// tune_main.cc - matex-tune: measures each algorithm of allreduce, broadcast,
// allgather and reduce_scatter at a sweep of sizes in the layout it runs in,
// fits seconds = alpha + beta * bytes per algorithm, and writes a tuning file
// (libmatexcomm/src/core/tuning_file.h) that the library reads under
// MATEX_CALIBRATE=file and bench/analysis/scale_model.py reads for its intra-node costs.
//
//   mpirun -np 4 matex-tune [-o FILE] [-b 64] [-e 16M] [-f 4] [-r 7]
//
// Each (size, algorithm) is timed in -r rounds, all sizes and algorithms
// interleaved round by round, so that a slow moment of the machine spreads
// over all of them. A round runs a batch of calls, each on freshly written
// input after a barrier (as matex-bench times them); the
// slowest rank's time per call counts, and the median of the rounds is kept.
// Every first call's result is checked against the exact sum.
#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "aligned_buffer.h"
#include "bench_options.h"
#include "cost_fit.h"
#include "rank_latency.h"
#include "core/tuning_file.h"
#include "matexcomm/matexcomm.h"

namespace {

// The change of latency across the rounds past which matex-tune warns (near and far
// placements of the cores differed by 2-3x on a 2-core VM here).
constexpr double kLatencyChangeWarned = 1.5;

using matexcomm::AlgorithmCost;
using matexcomm::TuningFile;

struct TuneOptions {
  std::string path;
  size_t min_bytes = 64;
  size_t max_bytes = 16u << 20;
  size_t factor = 4;
  int rounds = 7;
};

// Page-aligned floats, as matex-bench and the frameworks hand buffers over.
class Floats {
 public:
  explicit Floats(size_t n) : buffer_(n * sizeof(float)), size_(n) {}
  float* data() const { return static_cast<float*>(buffer_.data()); }
  float* begin() const { return data(); }
  float& operator[](size_t i) const { return data()[i]; }
  size_t size() const { return size_; }

 private:
  matexbench::AlignedBuffer buffer_;
  size_t size_;
};

struct Case {
  matex_collective_t coll;
  const char* collective;  // the tuning file's key: "allreduce_in_place" for allreduce in place
  const char* algorithm;
  bool in_place = false;
};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "matex-tune: %s\n", message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::abort();
}

void check(matex_status_t status, const char* what) {
  if (status != MATEX_SUCCESS) fail(std::string(what) + ": " + matex_last_error());
}

TuneOptions parse(int argc, char** argv) {
  TuneOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::printf("usage: mpirun -np N matex-tune [-o FILE] [-b MIN] [-e MAX] [-f FACTOR] [-r ROUNDS]\n"
                  "  -o  the tuning file to write (default: MATEX_TUNING_FILE, else %s)\n"
                  "  -b, -e, -f  sizes in bytes per rank, MIN to MAX by FACTOR (default 64 to 16M by 4)\n"
                  "  -r  timed rounds per size and algorithm; the median counts (default 7)\n",
                  matexcomm::default_tuning_path().c_str());
      MPI_Finalize();
      std::exit(0);
    }
    if (i + 1 >= argc) fail("option " + flag + " needs a value");
    const std::string value = argv[++i];
    size_t number = 0;
    if (flag == "-o") {
      options.path = value;
    } else if (!matexbench::parse_byte_size(value, &number)) {
      fail("option " + flag + ": not a size: " + value);
    } else if (flag == "-b") {
      options.min_bytes = number;
    } else if (flag == "-e") {
      options.max_bytes = number;
    } else if (flag == "-f") {
      options.factor = number;
    } else if (flag == "-r") {
      options.rounds = static_cast<int>(number);
    } else {
      fail("unknown option " + flag + " (-h lists them)");
    }
  }
  if (options.min_bytes < 4 || options.max_bytes < options.min_bytes || options.max_bytes > (size_t{1} << 30)) {
    fail("-b and -e: need 4 <= MIN <= MAX <= 1G bytes");
  }
  if (options.factor < 2) fail("-f: the factor must be at least 2");
  if (options.rounds < 1 || options.rounds > 1000) fail("-r: from 1 to 1000 rounds");
  if (options.path.empty()) {
    const char* value = nullptr;
    if (matex_config_get("MATEX_TUNING_FILE", &value) == MATEX_SUCCESS && value != nullptr) options.path = value;
    if (options.path.empty()) options.path = matexcomm::default_tuning_path();
  }
  return options;
}

// Calls per round: many where one call takes microseconds, at least two.
int batch_calls(size_t bytes) { return static_cast<int>(std::clamp<size_t>((8u << 20) / bytes, 2, 32)); }

// One call of `c` moving `bytes` per rank (float32; sums for the reductions).
void run_once(matex_comm_t comm, const Case& c, size_t bytes, int p, const Floats& send, const Floats& recv) {
  const size_t count = bytes / sizeof(float);
  switch (c.coll) {
    case MATEX_COLL_ALLREDUCE:
      check(matex_allreduce(comm, c.in_place ? recv.data() : send.data(), recv.data(), count, MATEX_FLOAT32,
                            MATEX_SUM),
            "allreduce");
      break;
    case MATEX_COLL_BROADCAST:
      check(matex_broadcast(comm, recv.data(), count, MATEX_FLOAT32, 0), "broadcast");
      break;
    case MATEX_COLL_ALLGATHER:
      check(matex_allgather(comm, send.data(), recv.data(), count / p, MATEX_FLOAT32), "allgather");
      break;
    case MATEX_COLL_REDUCE_SCATTER:
      check(matex_reduce_scatter(comm, send.data(), recv.data(), count / p, MATEX_FLOAT32, MATEX_SUM),
            "reduce_scatter");
      break;
    default: fail("no such collective");
  }
}

// The first call's allreduce result against the exact sum: rank r sends (i % 8) + r.
bool allreduce_correct(const Floats& recv, size_t count, int p) {
  for (size_t i = 0; i < count; ++i) {
    if (recv[i] != static_cast<float>(p * static_cast<int>(i % 8) + p * (p - 1) / 2)) return false;
  }
  return true;
}

std::string utc_now() {
  char text[32];
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

void write_file(const std::string& path, const std::string& text) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail("cannot create " + dir + ": " + std::strerror(errno));
  }
  const std::string temporary = path + ".tmp";
  FILE* out = std::fopen(temporary.c_str(), "w");
  if (out == nullptr) fail("cannot write " + temporary + ": " + std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (std::fclose(out) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    fail("cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const TuneOptions options = parse(argc, argv);
  matex_comm_t comm = nullptr;
  check(matex_init(&comm), "matex_init");
  int rank = 0, p = 1, nodes = 1, node = 0;
  matex_comm_rank(comm, &rank);
  matex_comm_size(comm, &p);
  matex_comm_node_count(comm, &nodes);
  matex_comm_node_index(comm, &node);

  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    // Whole floats per rank for the gathers, rounded up (never 0), each size once.
    const size_t unit = sizeof(float) * p;
    const size_t rounded = (bytes + unit - 1) / unit * unit;
    if (sizes.empty() || sizes.back() != rounded) sizes.push_back(rounded);
  }
  const std::vector<Case> cases = {
      {MATEX_COLL_ALLREDUCE, "allreduce", "flat"},        {MATEX_COLL_ALLREDUCE, "allreduce", "oneshot"},
      {MATEX_COLL_ALLREDUCE, "allreduce", "rab"},         {MATEX_COLL_ALLREDUCE, "allreduce", "rs_ar_ag"},
      {MATEX_COLL_ALLREDUCE, "allreduce", "rs_ar_ag_cma"},
      {MATEX_COLL_ALLREDUCE, "allreduce_in_place", "rs_ar_ag", true},
      {MATEX_COLL_ALLREDUCE, "allreduce_in_place", "rs_ar_ag_cma", true}, {MATEX_COLL_BROADCAST, "broadcast", "flat"},
      {MATEX_COLL_BROADCAST, "broadcast", "hier"},        {MATEX_COLL_ALLGATHER, "allgather", "flat"},
      {MATEX_COLL_REDUCE_SCATTER, "reduce_scatter", "flat"}};
  Floats send(options.max_bytes / sizeof(float) + p), recv(send.size());
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(i % 8 + rank);

  // Which cases run as themselves here (oneshot needs one node, single copies need CMA, ...):
  // matex_last_algorithm names what actually ran.
  std::vector<bool> runs(cases.size(), true);
  int wrong = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    check(matex_set_algorithm(comm, cases[c].coll, cases[c].algorithm), "matex_set_algorithm");
    run_once(comm, cases[c], sizes.front(), p, send, recv);
    const char* used = "";
    matex_last_algorithm(comm, cases[c].coll, &used);
    runs[c] = std::strcmp(used, cases[c].algorithm) == 0;
  }
  // The latency between ranks 0 and 1 before and after the rounds: on a shared
  // machine the cores' placement can change, and the shared-memory algorithms
  // with it (rank_latency.h).
  const double latency_before_us = matexbench::measure_rank_latency_us();
  // seconds[c][s][round]: this rank's time per call.
  std::vector<double> mine(cases.size() * sizes.size() * options.rounds, 0);
  for (int round = -1; round < options.rounds; ++round) {  // round -1 warms up
    for (size_t s = 0; s < sizes.size(); ++s) {
      for (size_t c = 0; c < cases.size(); ++c) {
        if (!runs[c]) continue;
        check(matex_set_algorithm(comm, cases[c].coll, cases[c].algorithm), "matex_set_algorithm");
        const int calls = round == -1 ? 1 : batch_calls(sizes[s]);  // the warm-up's one call is checked
        double total = 0;
        for (int i = 0; i < calls; ++i) {
          // Fresh input before every call, as a training step's gradients are (and as
          // matex-bench does): the input lines sit in their writer's cache, not the reader's.
          const size_t count = sizes[s] / sizeof(float);
          if (cases[c].in_place) {
            std::copy(send.begin(), send.begin() + count, recv.begin());
          } else {
            for (size_t e = 0; e < count; ++e) send[e] = static_cast<float>(e % 8 + rank);
          }
          MPI_Barrier(MPI_COMM_WORLD);
          const double start = MPI_Wtime();
          run_once(comm, cases[c], sizes[s], p, send, recv);
          total += MPI_Wtime() - start;
        }
        const double seconds = total / calls;
        if (round == -1 && cases[c].coll == MATEX_COLL_ALLREDUCE) {
          wrong += !allreduce_correct(recv, sizes[s] / sizeof(float), p);
        }
        if (round >= 0) mine[(c * sizes.size() + s) * options.rounds + round] = seconds;
      }
    }
  }
  const double latency_after_us = matexbench::measure_rank_latency_us();
  std::vector<double> slowest(mine.size(), 0);
  MPI_Reduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int wrong_anywhere = 0;
  MPI_Allreduce(&wrong, &wrong_anywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::vector<int> node_of(p, 0);
  MPI_Gather(&node, 1, MPI_INT, node_of.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  const char* library = "";
  const char* host_kind = "";
  const char* layout = "";
  check(matex_tuning_identity(comm, &library, &host_kind, &layout), "matex_tuning_identity");
  if (wrong_anywhere != 0) fail(std::to_string(wrong_anywhere) + " allreduce results were wrong: no file written");

  if (rank == 0) {
    TuningFile file;
    file.identity = {library, host_kind, layout};
    file.created = utc_now();
    file.ranks = p;
    file.node_sizes.assign(nodes, 0);
    for (int n : node_of) ++file.node_sizes[n];
    file.cores_shared = std::string(layout).find(";shared=1;") != std::string::npos;
    file.rounds = options.rounds;
    std::printf("# matex-tune: %d ranks on %d nodes, %s\n# layout %s\n", p, nodes, host_kind, layout);
    std::printf("# the slowest rank's median of %d rounds, us per call\n", options.rounds);
    if (latency_before_us >= 0) {
      std::printf("# latency rank 0 <-> rank 1 (MPI, 8 B, half a round trip) before / after the rounds: %.2f / %.2f us\n",
                  latency_before_us, latency_after_us);
      // A change this large has meant the cores' placement changed, and the shared-memory
      // algorithms' times with it by 4-8x (docs/benchmarks.md): the file then mixes two states.
      const double ratio = std::max(latency_before_us, latency_after_us) /
                           std::max(std::min(latency_before_us, latency_after_us), 1e-3);
      if (ratio > kLatencyChangeWarned) {
        std::fprintf(stderr,
                     "matex-tune: warning: the latency between ranks 0 and 1 went from %.2f to %.2f us during the "
                     "rounds: the machine changed state while it was measured (on a shared or virtual machine, "
                     "the cores' placement; docs/benchmarks.md), and the file may mix both; run matex-tune again\n",
                     latency_before_us, latency_after_us);
      }
    }
    for (size_t c = 0; c < cases.size(); ++c) {
      if (!runs[c]) continue;
      AlgorithmCost cost;
      for (size_t s = 0; s < sizes.size(); ++s) {
        std::vector<double> rounds(slowest.begin() + (c * sizes.size() + s) * options.rounds,
                                   slowest.begin() + (c * sizes.size() + s + 1) * options.rounds);
        std::nth_element(rounds.begin(), rounds.begin() + rounds.size() / 2, rounds.end());
        cost.measured.push_back({sizes[s], std::max(rounds[rounds.size() / 2], 1e-9)});
      }
      matexcomm::fit_alpha_beta(&cost);
      std::printf("%-18s %-13s alpha %9.2f us  beta %8.4f us/KiB :", cases[c].collective, cases[c].algorithm,
                  cost.alpha_seconds * 1e6, cost.beta_seconds_per_byte * 1024e6);
      for (const auto& point : cost.measured) std::printf(" %.1f", point.seconds * 1e6);
      std::printf("\n");
      file.collectives[cases[c].collective][cases[c].algorithm] = cost;
    }
    write_file(options.path, file.to_json());
    std::printf("# wrote %s (use it with MATEX_CALIBRATE=file MATEX_TUNING_FILE=%s)\n", options.path.c_str(),
                options.path.c_str());
  }
  matex_finalize(&comm);
  MPI_Finalize();
  return 0;
}
