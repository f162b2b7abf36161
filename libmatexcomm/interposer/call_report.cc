#include "call_report.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace matexinterpose {

namespace {

constexpr int kEntries = static_cast<int>(Entry::kCount);
constexpr int kReasons = static_cast<int>(Reason::kCount);

constexpr const char* kEntryNames[kEntries] = {
    "MPI_Allreduce",  "MPI_Reduce",  "MPI_Bcast",          "MPI_Allgather",
    "MPI_Allgatherv", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Barrier",
    "MPI_Iallreduce", "MPI_Ireduce", "MPI_Ibcast",         "MPI_Iallgather",
    "MPI_Iallgatherv", "MPI_Ireduce_scatter_block", "MPI_Ireduce_scatter", "MPI_Ibarrier",
    "MPI-4 _c forms", "MPI-4 _init forms"};

constexpr const char* kReasonNames[kReasons] = {
    "served", "interposer inactive", "auto runs MPI's own", "below MATEX_INTERPOSE_MIN_BYTES", "datatype", "op", "intercommunicator",
    "invalid argument", "nonblocking", "MPI-4 form", "over 2 GiB", "no libmatexcomm state", "after MPI_Finalize"};

// Each thread counts into a block of its own, so a call pays no locked
// instruction: only its thread writes a block (a relaxed load and store),
// and the report reads them all. A thread's block is folded into the
// retired totals when the thread exits.
struct Block {
  std::atomic<uint64_t> calls[kEntries][kReasons] = {};
  std::atomic<uint64_t> bytes[kEntries][kReasons] = {};
};

// All three are constant-initialized, so a call counted before this
// library's static constructors ran (from another library's) finds them ready.
std::mutex g_blocks_mutex;                   // guards the two below
Block g_retired;                             // from threads that exited, and calls made after
std::vector<Block*>* g_live_blocks = nullptr;  // made at the first thread's first call, never freed

thread_local Block* t_block __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_block_gone __attribute__((tls_model("initial-exec"))) = false;  // folded at thread exit

void add(std::atomic<uint64_t>& counter, uint64_t amount) {
  counter.store(counter.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

// Owns the calling thread's block; its destructor runs at thread exit.
struct ThreadBlock {
  Block* block = new Block;
  ThreadBlock() {
    std::lock_guard<std::mutex> lock(g_blocks_mutex);
    if (g_live_blocks == nullptr) g_live_blocks = new std::vector<Block*>;
    g_live_blocks->push_back(block);
  }
  ~ThreadBlock() {
    std::lock_guard<std::mutex> lock(g_blocks_mutex);
    for (int e = 0; e < kEntries; ++e) {
      for (int r = 0; r < kReasons; ++r) {
        g_retired.calls[e][r].fetch_add(block->calls[e][r].load(std::memory_order_relaxed));
        g_retired.bytes[e][r].fetch_add(block->bytes[e][r].load(std::memory_order_relaxed));
      }
    }
    g_live_blocks->erase(std::find(g_live_blocks->begin(), g_live_blocks->end(), block));
    // Calls made later on this thread (exit-time code, other thread_local
    // destructors) count straight into the retired totals.
    t_block = nullptr;
    t_block_gone = true;
    delete block;
    block = nullptr;
  }
};

Block* this_thread_block() {
  thread_local ThreadBlock owner;
  t_block = owner.block;
  return t_block;
}

std::string with_unit(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace

void count_call(Entry entry, Reason reason, size_t bytes) {
  const int e = static_cast<int>(entry);
  const int r = static_cast<int>(reason);
  if (t_block == nullptr && t_block_gone) {
    g_retired.calls[e][r].fetch_add(1);
    g_retired.bytes[e][r].fetch_add(bytes);
    return;
  }
  Block* block = t_block != nullptr ? t_block : this_thread_block();
  add(block->calls[e][r], 1);
  add(block->bytes[e][r], bytes);
}

void print_report(bool every_rank) {
  std::vector<uint64_t> mine(2 * kEntries * kReasons);
  {
    std::lock_guard<std::mutex> lock(g_blocks_mutex);
    for (int e = 0; e < kEntries; ++e) {
      for (int r = 0; r < kReasons; ++r) {
        uint64_t calls = g_retired.calls[e][r].load();
        uint64_t bytes = g_retired.bytes[e][r].load();
        for (size_t b = 0; g_live_blocks != nullptr && b < g_live_blocks->size(); ++b) {
          calls += (*g_live_blocks)[b]->calls[e][r].load(std::memory_order_relaxed);
          bytes += (*g_live_blocks)[b]->bytes[e][r].load(std::memory_order_relaxed);
        }
        mine[2 * (e * kReasons + r)] = calls;
        mine[2 * (e * kReasons + r) + 1] = bytes;
      }
    }
  }
  std::vector<uint64_t> sums(mine.size());
  int rank = 0;
  int size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (every_rank) {
    PMPI_Reduce(mine.data(), sums.data(), static_cast<int>(mine.size()), MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  } else {
    sums = mine;
  }
  if (rank != 0) return;
  std::string text = "matex interposer report: " +
                     std::string(every_rank ? "sums over the " + std::to_string(size) + " ranks of MPI_COMM_WORLD"
                                            : "rank 0 only") +
                     "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-26s %10s %10s %12s %10s %12s  %s\n", "collective", "calls", "served",
                "bytes served", "to PMPI", "bytes PMPI", "why PMPI (calls)");
  text += line;
  for (int e = 0; e < kEntries; ++e) {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    std::string why;
    for (int r = 0; r < kReasons; ++r) {
      const uint64_t c = sums[2 * (e * kReasons + r)];
      calls += c;
      bytes += sums[2 * (e * kReasons + r) + 1];
      if (r != 0 && c != 0) why += (why.empty() ? "" : ", ") + std::string(kReasonNames[r]) + " " + std::to_string(c);
    }
    if (calls == 0) continue;
    const uint64_t served = sums[2 * (e * kReasons)];
    const uint64_t served_bytes = sums[2 * (e * kReasons) + 1];
    std::snprintf(line, sizeof line, "%-26s %10" PRIu64 " %10" PRIu64 " %12s %10" PRIu64 " %12s  %s\n",
                  kEntryNames[e], calls, served, with_unit(served_bytes).c_str(), calls - served,
                  with_unit(bytes - served_bytes).c_str(), why.c_str());
    text += line;
  }
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace matexinterpose
