#include "flight_record.h"

// The recorder's member templates are defined in this header: this file
// compiles recordWithResetEnabled (and what it calls) for torch's instance.
#include <torch/csrc/distributed/c10d/FlightRecorderDetail.hpp>

#include <atomic>

#include "torch_compat.h"

namespace matex_torch {

namespace {

std::atomic<bool> g_native{true};

// matex's names for its collectives and torch's (the analyzer's) for them.
struct CollectiveName {
  const char* matex;
  const char* torch;
};
constexpr CollectiveName kCollectiveNames[] = {
    {"allreduce", "all_reduce"},
    {"allreduce_coalesced", "allreduce_coalesced"},
    {"reduce", "reduce"},
    {"broadcast", "broadcast"},
    {"barrier", "barrier"},
    {"allgather", "all_gather"},
    {"all_gather_into_tensor", "_all_gather_base"},
    {"allgather_coalesced", "allgather_coalesced"},
    {"allgather_into_tensor_coalesced", "all_gather_into_tensor_coalesced"},
    {"reduce_scatter", "reduce_scatter"},
    {"reduce_scatter_tensor", "_reduce_scatter_base"},
    {"reduce_scatter_tensor_coalesced", "reduce_scatter_tensor_coalesced"},
    {"gather", "gather"},
    {"gather_into_tensor", "gather"},
    {"scatter", "scatter"},
    {"all_to_all", "all_to_all"},
    {"all_to_all_single", "all_to_all_single"},
};

// torch's name for one of matex's collectives ("allreduce" -> "all_reduce").
const char* collective_name(const std::string& what) {
  for (const CollectiveName& name : kCollectiveNames) {
    if (what == name.matex) return name.torch;
  }
  return what.c_str();
}

void set_at_least(int64_t& field, int64_t value) {
  std::atomic_ref<int64_t> slot(field);
  int64_t seen = slot.load(std::memory_order_relaxed);
  while (seen < value && !slot.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

void FlightRecord::set_native(bool on) { g_native.store(on); }

bool FlightRecord::native() { return g_native.load(); }

FlightRecord::FlightRecord(uint64_t index, std::vector<int> global_ranks, int world_rank)
    : index_(index), global_ranks_(global_ranks.begin(), global_ranks.end()) {
  if (!native()) return;
#if MATEX_TORCH_HAS_NAMED_FLIGHT_RECORDERS
  c10d::FlightRecorder<c10::Event>* recorder = c10d::getFlightRecorder("matex");
  if (recorder == nullptr || !recorder->enabled_) return;
  recorder->setRank(world_rank);
  recorder_ = recorder;
#else
  (void)world_rank;  // this torch's recorder has no per-backend instance: record nothing
#endif
}

FlightEntry FlightRecord::record(const c10d::Backend& backend, const std::string& op, uint64_t op_id,
                                 const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                                 std::chrono::milliseconds timeout, bool p2p) {
  FlightEntry entry;
#if MATEX_TORCH_HAS_NAMED_FLIGHT_RECORDERS
  if (recorder_ == nullptr) return entry;
  std::call_once(named_, [&] {
    group_ = std::make_tuple(backend.getGroupUid(), backend.getGroupDesc());
    recorder_->record_pg_ranks(group_, global_ranks_);
  });
  const size_t collective = p2p ? collectives_.load() : ++collectives_;
  const size_t point_to_point = p2p ? ++p2p_ : p2p_.load();
  const auto trace = recorder_->recordWithResetEnabled(index_, group_, collective, point_to_point, op_id,
                                                       std::string("matex:") + (p2p ? op.c_str() : collective_name(op)),
                                                       inputs, outputs, nullptr, nullptr, timeout,
                                                       status_, p2p);
  if (!trace.id) return entry;
  entry.recorder_ = recorder_;
  entry.id_ = trace.id;
  entry.epoch_ = trace.reset_epoch;
  entry.status_ = status_;
  if (!p2p) {  // the group's status counts collectives
    entry.sequence_ = static_cast<int64_t>(collective);
    set_at_least(status_->lastEnqueuedSeq, entry.sequence_);
  }
#else
  (void)backend, (void)op, (void)op_id, (void)inputs, (void)outputs, (void)timeout, (void)p2p;
#endif
  return entry;
}

void FlightEntry::started() {
  if (recorder_ == nullptr) return;
  started_ = std::chrono::steady_clock::now();
  if (sequence_ >= 0) set_at_least(status_->lastStartedSeq, sequence_);
}

void FlightEntry::completed() {
  if (recorder_ == nullptr) return;
  std::optional<float> duration;
  if (started_ != std::chrono::steady_clock::time_point()) {
    duration = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - started_).count();
  }
#if MATEX_TORCH_HAS_NAMED_FLIGHT_RECORDERS
  recorder_->retire_completed(id_, epoch_, duration);
#endif
  if (sequence_ >= 0) set_at_least(status_->lastCompletedSeq, sequence_);
  recorder_ = nullptr;
}

}  // namespace matex_torch
