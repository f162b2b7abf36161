#include "flight_record.h"

// The recorder's member templates are defined in this header; this file
// instantiates the two it uses (record, retire_completed) on torch's instance.
#include <torch/csrc/distributed/c10d/FlightRecorderDetail.hpp>

#include <atomic>
#include <tuple>

namespace matex_torch {

namespace {

std::atomic<bool> g_native{true};

void set_at_least(int64_t& field, int64_t value) {
  std::atomic_ref<int64_t> slot(field);
  int64_t seen = slot.load(std::memory_order_relaxed);
  while (seen < value && !slot.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

void FlightRecord::set_native(bool on) { g_native.store(on); }

bool FlightRecord::native() { return g_native.load(); }

FlightRecord::FlightRecord(uint64_t index, std::vector<int> global_ranks)
    : index_(index), global_ranks_(global_ranks.begin(), global_ranks.end()) {
  if (!native()) return;
  c10d::FlightRecorder<c10::Event>* recorder = c10d::getFlightRecorder("matex");
  if (recorder != nullptr && recorder->enabled_) recorder_ = recorder;
}

FlightEntry FlightRecord::record(const c10d::Backend& backend, const std::string& what,
                                 const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                                 std::chrono::milliseconds timeout, bool p2p) {
  FlightEntry entry;
  if (recorder_ == nullptr) return entry;
  const std::tuple<std::string, std::string> group(backend.getGroupUid(), backend.getGroupDesc());
  if (!ranks_published_.exchange(true)) recorder_->record_pg_ranks(group, global_ranks_);
  const size_t collective = p2p ? collectives_.load() : ++collectives_;
  const size_t point_to_point = p2p ? ++p2p_ : p2p_.load();
  const size_t op = ++ops_;
  const auto trace = recorder_->recordWithResetEnabled(index_, group, collective, point_to_point, op, "matex:" + what,
                                                       inputs, outputs, nullptr, nullptr, timeout, status_, p2p);
  if (!trace.id) return entry;
  entry.recorder_ = recorder_;
  entry.id_ = trace.id;
  entry.epoch_ = trace.reset_epoch;
  entry.status_ = status_;
  if (!p2p) {  // the group's status counts collectives
    entry.sequence_ = static_cast<int64_t>(collective);
    set_at_least(status_->lastEnqueuedSeq, entry.sequence_);
  }
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
  recorder_->retire_completed(id_, epoch_, duration);
  if (sequence_ >= 0) set_at_least(status_->lastCompletedSeq, sequence_);
  recorder_ = nullptr;
}

}  // namespace matex_torch
