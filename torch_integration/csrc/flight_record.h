// flight_record.h - matex's calls in torch's flight recorder, written by the
// backend itself, as gloo writes its own.
//
// torch 2.15 records an out-of-tree backend through a generic hook on its
// process group (FlightRecorderHook). Here that hook cost a 4-byte allreduce
// about 7 us, more than the whole matex call, and since matex pushes no
// completion to it, it retired each entry when the call was issued: a dump of
// a hung job could not tell the call that never finished. Recording natively
// costs one entry and a Python traceback (gloo pays the same), and the entry
// is retired when the collective really completes, with its duration, so a
// dump shows the unfinished call as "scheduled". matex_torch tells torch that
// "matex" records itself, so the hook is not attached on top (_backend.py).
//
// The recorder is torch's own instance for "matex" (c10d::getFlightRecorder),
// so torch's dump calls read it: _dump_fr_trace(backend="matex") and the
// json and file forms. TORCH_FR_BUFFER_SIZE=0 turns it off, as for gloo.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace matex_torch {

// One recorded call. Empty (records nothing) when recording is off. Each copy
// is used by one thread: the job, or the receive's completion, that owns it.
class FlightEntry {
 public:
  // The collective starts running now: its duration is measured from here.
  void started();
  // Marks the entry completed, with its duration (the first call only).
  // A call that fails is never marked: its entry stays "scheduled".
  void completed();

 private:
  friend class FlightRecord;
  c10d::FlightRecorder<c10::Event>* recorder_ = nullptr;
  std::optional<size_t> id_;
  std::optional<size_t> epoch_;
  std::shared_ptr<c10d::ProcessGroupStatus> status_;
  int64_t sequence_ = -1;
  std::chrono::steady_clock::time_point started_;
};

// The flight record of one process group.
class FlightRecord {
 public:
  // `index`: the group's number in this process; `global_ranks`: its members'
  // world ranks in group rank order (the dump publishes them); `world_rank`:
  // this process's (it names the dump file).
  FlightRecord(uint64_t index, std::vector<int> global_ranks, int world_rank);

  // Records a call before it runs, as "matex:<name>" in torch's names, which
  // its trace analyzer matches across ranks: `op` is matex's name of a
  // collective ("allreduce" is recorded as "all_reduce"), or for
  // point-to-point the name itself ("send 0->1", "recv 1<-0", "recv 1<-?").
  // `op_id` numbers the group's calls. `backend` gives the group's name and
  // description (torch sets them after creating it).
  FlightEntry record(const c10d::Backend& backend, const std::string& op, uint64_t op_id,
                     const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                     std::chrono::milliseconds timeout, bool p2p);

  // Off for backends created afterwards (matex_torch's takeover: a group
  // whose CUDA half needs torch's hook gets its matex calls recorded there).
  static void set_native(bool on);
  static bool native();

 private:
  c10d::FlightRecorder<c10::Event>* recorder_ = nullptr;  // null: off
  uint64_t index_;
  std::vector<uint64_t> global_ranks_;
  std::shared_ptr<c10d::ProcessGroupStatus> status_ = std::make_shared<c10d::ProcessGroupStatus>();
  std::once_flag named_;                         // the group's name, read and published at the first call
  std::tuple<std::string, std::string> group_;  // (name, description)
  std::atomic<size_t> collectives_{0};
  std::atomic<size_t> p2p_{0};
};

}  // namespace matex_torch
