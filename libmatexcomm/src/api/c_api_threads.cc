// c_api_threads.cc - matex_thread_budget: the C face of topo::budget_threads.
#include <algorithm>
#include <cstring>
#include <string>

#include "api/c_api_support.h"
#include "comm/communicator.h"
#include "core/error.h"
#include "topology/thread_budget.h"
#include "matexcomm/matexcomm.h"

using matexcomm::capi::guarded;
using matexcomm::capi::live_comm;
using matexcomm::capi::require_out;

namespace {

void copy_cut(const std::string& text, char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" matex_status_t matex_thread_budget(matex_comm_t comm, matex_thread_budget_t* budget, int* cpus,
                                              size_t cpus_capacity, char* table, size_t table_capacity) {
  return guarded([&] {
    require_out(budget, "budget");
    matexcomm::Communicator& c = live_comm(comm);
    const std::string setting = c.config().get_string("MATEX_THREADS");
    matexcomm::topo::ThreadBudget mine = matexcomm::topo::budget_threads(c.mpi_comm(), c.layout(), setting);
    std::string text = matexcomm::topo::budget_table(c.mpi_comm(), 0, c.layout(), mine, setting);
    *budget = matex_thread_budget_t{};
    budget->cores = mine.cores;
    budget->cpu_count = static_cast<int>(mine.pus.size());
    budget->intra_op_threads = mine.intra_op;
    budget->inter_op_threads = mine.inter_op;
    budget->narrowed = mine.narrowed;
    budget->shared = mine.shared;
    budget->starved = mine.starved;
    copy_cut(text, table, table_capacity);
    if (cpus != nullptr) {
      MATEX_REQUIRE(cpus_capacity >= mine.pus.size(), MATEX_ERR_INVALID_ARG,
                    "cpus_capacity is " + std::to_string(cpus_capacity) + ", the block has " +
                        std::to_string(mine.pus.size()) + " CPUs");
      std::copy(mine.pus.begin(), mine.pus.end(), cpus);
    }
  });
}
