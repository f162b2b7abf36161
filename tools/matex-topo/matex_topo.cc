// matex_topo.cc - matex-topo: shows how libmatexcomm sees a job.
//
// Run under mpirun. Every rank reads the MATEX_* configuration, joins the
// layout discovery and probes its hardware; rank 0 prints one table row (or
// JSON entry) per rank. A failure on any rank is agreed on by all ranks before
// the next collective step, so the job stops with exit code 2 instead of
// hanging, and every rank says why it stopped.
//
//   matex-topo [--json]              the report (needs MPI)
//   matex-topo --print-config        MATEX_* values in effect (no MPI)
//   matex-topo --print-config-markdown   the settings table for the docs (no MPI)
#include <mpi.h>

#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/error.h"
#include "topology/hardware.h"
#include "topology/layout.h"
#include "topology/thread_budget.h"
#include "rank_report.h"
#include "report_format.h"

namespace {

using namespace matexcomm;
using namespace matexcomm::topo;

constexpr const char* kUsage =
    "usage: mpirun -np N matex-topo [--json]\n"
    "       matex-topo --print-config | --print-config-markdown | --help\n"
    "\n"
    "  (no option)              table of every rank: node, local rank, host, bound cores,\n"
    "                           NUMA nodes and nearest GPU, after a machine summary\n"
    "  --json                   the same report as one JSON object\n"
    "  --print-config           the MATEX_* settings in effect (no MPI needed)\n"
    "  --print-config-markdown  the table of all MATEX_* settings in Markdown (no MPI needed)\n"
    "  --help                   this text\n";

enum class Mode { kTable, kJson, kPrintConfig, kPrintConfigMarkdown, kHelp };

std::optional<Mode> parse_mode(int argc, char** argv) {
  if (argc == 1) return Mode::kTable;
  if (argc > 2) return std::nullopt;
  std::string option = argv[1];
  if (option == "--json") return Mode::kJson;
  if (option == "--print-config") return Mode::kPrintConfig;
  if (option == "--print-config-markdown") return Mode::kPrintConfigMarkdown;
  if (option == "--help" || option == "-h") return Mode::kHelp;
  return std::nullopt;
}

int print_config(bool markdown) {
  try {
    if (markdown) {
      std::cout << config_table_markdown();
    } else {
      for (const std::string& line : Config::from_environment().describe()) std::cout << line << '\n';
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "matex-topo: " << e.what() << '\n';
    return 2;
  }
}

// One write per message, so the lines of different ranks do not interleave.
void say_on_stderr(int rank, const std::string& message) {
  std::string line = "matex-topo: rank " + std::to_string(rank) + ": " + message + "\n";
  std::cerr << line << std::flush;
}

// Runs one local step; returns its error message, or "" when it succeeded.
std::string attempt(const std::function<void()>& step) {
  try {
    step();
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Collective: true when no rank failed. Otherwise every rank says why it stops.
bool every_rank_succeeded(int rank, const std::string& failure) {
  int ok = failure.empty() ? 1 : 0;
  int all_ok = 0;
  check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (all_ok == 1) return true;
  say_on_stderr(rank, failure.empty() ? "stopping because another rank failed" : failure);
  return false;
}

int report_job(bool as_json) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  std::optional<Config> config;
  if (!every_rank_succeeded(rank, attempt([&] { config = Config::from_environment(); }))) return 2;
  std::string host;
  if (!every_rank_succeeded(rank, attempt([&] { host = make_host_id(config->get_string("MATEX_HOSTID")); }))) {
    return 2;
  }
  Layout layout;
  std::string layout_failure = attempt([&] {
    layout = discover_layout(MPI_COMM_WORLD, config->get_string("MATEX_VIRTUAL_NODES"), host);
  });
  if (!every_rank_succeeded(rank, layout_failure)) return 2;
  HardwareInfo hardware;
  if (!every_rank_succeeded(rank, attempt([&] { hardware = probe_hardware(); }))) return 2;

  ThreadBudget budget;
  const std::string threads_setting = config->get_string("MATEX_THREADS");
  if (!every_rank_succeeded(rank, attempt([&] {
        budget = budget_threads(MPI_COMM_WORLD, layout, threads_setting);
      }))) {
    return 2;
  }

  RankReport mine;
  mine.rank = layout.world_rank;
  mine.node = layout.node_index;
  mine.local_rank = layout.local_rank;
  mine.local_size = layout.local_size;
  mine.host = host;
  mine.bound_cores = hardware.bound_cores;
  mine.numa = hardware.numa_of_binding;
  mine.nearest_gpu = hardware.nearest_gpu;
  mine.thread_cpus = format_cpu_list(budget.pus);
  mine.threads = budget.intra_op == 0 ? "-" : std::to_string(budget.intra_op) + "/" + std::to_string(budget.inter_op);
  if (budget.shared) mine.threads += " shared";  // more ranks than cores on this host
  std::vector<RankReport> reports = gather_reports(MPI_COMM_WORLD, 0, mine);
  if (rank != 0) return 0;

  JobSummary job;
  job.world_size = layout.world_size;
  job.node_count = layout.node_count;
  job.virtual_nodes = layout.virtual_nodes;
  job.node_sizes = layout.node_sizes;
  job.machine = hardware;
  if (as_json) {
    print_json_report(std::cout, job, reports);
  } else {
    print_text_report(std::cout, job, reports);
  }
  std::cout.flush();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Mode> mode = parse_mode(argc, argv);
  if (!mode) {
    std::cerr << "matex-topo: unrecognized arguments:";
    for (int i = 1; i < argc; ++i) std::cerr << ' ' << argv[i];
    std::cerr << "\n" << kUsage;
    return 2;
  }
  if (*mode == Mode::kHelp) {
    std::cout << kUsage;
    return 0;
  }
  if (*mode == Mode::kPrintConfig || *mode == Mode::kPrintConfigMarkdown) {
    return print_config(*mode == Mode::kPrintConfigMarkdown);
  }

  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = report_job(*mode == Mode::kJson);
  } catch (const std::exception& e) {
    // Only reached for errors that not every rank shares (e.g. a failed MPI call).
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    say_on_stderr(rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return status;
}
