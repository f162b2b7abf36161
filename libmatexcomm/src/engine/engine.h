// engine.h - the asynchronous engine: tensors handed over by name from any
// thread, matched across ranks, fused, and run by one background thread.
//
// Life of a tensor: submit() checks it and queues it (the user's thread).
// The background thread wakes when something is queued, or every
// MATEX_CYCLE_MS otherwise, and runs a cycle: it announces what it got to rank
// 0 (MPI_Gatherv on a private communicator), rank 0's Coordinator answers with
// the operations every rank has asked for, in one order, fused where possible
// (MPI_Bcast), and every rank executes them on its own Communicator, which
// only this thread uses. Completion sets the request's status and runs its
// callback on the background thread. Once no rank has had anything pending
// for a second's worth of cycles, the cycle stretches to MATEX_IDLE_CYCLE_MS;
// every rank learns this from the same cycles' bits, so all switch at the same
// cycle.
//
// Join: a rank with nothing more to submit joins (kJoinName); until every rank
// has, it takes part in the others' allreduces with zeros (engine/join.cc).
//
// Errors: a tensor submitted differently by the ranks fails on every rank with
// a message quoting each rank's spec, and one that a rank refused (a check of
// its own failed) fails on every rank with that rank's status and reason; the
// engine carries on. Rank 0 warns
// about names that some ranks have submitted and others have not for
// MATEX_STALL_WARNING_SECONDS, and with MATEX_STALL_SHUTDOWN_SECONDS > 0 fails
// them. Destruction (collective) fails what is still pending with "shut down".
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/config.h"
#include "core/mpi_handles.h"
#include "engine/negotiation.h"
#include "engine/request_state.h"
#include "engine/response_cache.h"
#include "engine/timeline.h"
#include "algorithms/phase_clock.h"
#include "matexcomm/matexcomm.h"

namespace matexcomm {

class Communicator;

// One tensor handed to the engine (the checked form of matex_tensor_op_t).
struct TensorOp {
  std::string name;
  TensorSpec spec;
  const void* send = nullptr;  // allreduce input (== recv in place)
  void* recv = nullptr;        // allreduce output, broadcast buffer
  double prescale = 1.0;       // allreduce: input factor (floating dtypes)
  double postscale = 1.0;      // allreduce: output factor
  std::shared_ptr<RequestState> state;
  // A refusal: this rank's own checks failed, so instead of data it sends every
  // rank the reason, and the name fails everywhere (matex_engine_submit_refusal).
  matex_status_t refusal_status = MATEX_SUCCESS;
  std::string refusal;
  // Engine-side bookkeeping.
  int cache_bit = ResponseCache::kNone;  // announced by bit while cached with this spec
  bool announced = false;                // announced in full to the coordinator at least once
  std::chrono::steady_clock::time_point submitted_at;  // by the caller
  std::chrono::steady_clock::time_point queued_at;     // picked up by the engine's thread
  uint64_t arrival = 0;                                // order of pick-up: announcements keep it
};

// Counters of the background thread (matex_engine_stats).
struct EngineStats {
  uint64_t cycles = 0;
  uint64_t cached_cycles = 0;  // decided by the bit vector alone
  uint64_t full_cycles = 0;    // gather and broadcast through rank 0
  uint64_t idle_cycles = 0;    // nothing pending on this rank
  double idle_coordination_seconds = 0;  // median over the last idle cycles
  uint64_t fused_responses = 0;          // responses that carried more than one tensor
  uint64_t tensors = 0;                  // tensors completed
};

class Engine {
 public:
  // Collective over `parent`; starts the background thread.
  explicit Engine(MPI_Comm parent);
  // Collective: stops the thread once every rank has asked to, failing pending requests.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Checks every op (nothing is queued unless all pass) and queues them.
  void submit(std::vector<TensorOp> ops);

  EngineStats stats() const;
  void reset_stats();

 private:
  void check(const TensorOp& op) const;
  void check_shape(const TensorOp& op) const;
  void loop();
  // Waits for work (or a cycle), moves the queue into pending_; returns whether to vote for shutdown.
  bool absorb_queue();
  // One round of agreement: the bit vector, and the full negotiation when needed.
  std::vector<Response> negotiate(bool vote_shutdown, bool* cached);
  std::vector<Response> negotiate_in_full(bool vote_shutdown);
  // The wait before the next cycle: MATEX_CYCLE_MS, or MATEX_IDLE_CYCLE_MS once
  // no rank has had anything pending for kIdleBackoffAfterSeconds of cycles.
  double next_cycle_seconds() const;
  void count_idle_cycle(bool every_rank_idle);
  void inspect_stalls();
  void execute(const Response& response);
  // A joined rank's part in a tensor it did not submit (engine/join.cc).
  struct StandIns {
    explicit StandIns(size_t n) { ops.reserve(n), zeros.reserve(n); }
    std::vector<TensorOp> ops;  // reserved up front: the collective holds pointers into it
    std::vector<std::vector<char>> zeros;
  };
  TensorOp* stand_in(const Response& response, size_t index, StandIns* stand_ins);
  void finish_join(const Response& response);
  void execute_allreduce(const std::vector<TensorOp*>& ops);
  void execute_host_allreduce(const std::vector<TensorOp*>& ops);
  // Several tensors as one collective straight on their buffers (zero-copy fusion).
  void execute_fused_in_place(const std::vector<TensorOp*>& ops);
  // Tensors in GPU memory: packed, scaled and unpacked by CUDA kernels.
  void execute_device_allreduce(const std::vector<TensorOp*>& ops);
  void execute_broadcast(TensorOp& op);
  void execute_allgather(TensorOp& op, const std::vector<uint64_t>& rows);
  // Timeline events of one collective for every tensor it carried.
  void record_collective(const std::vector<TensorOp*>& ops, const char* what,
                         std::chrono::steady_clock::time_point begin, size_t bytes);
  void finish(const std::string& name, matex_status_t status, const std::string& message);
  void fail_everything(const std::string& message);

  Config config_;
  std::unique_ptr<Communicator> comm_;  // data movement; background thread only
  UniqueComm control_;                  // announcements and responses; background thread only
  int rank_ = 0;
  int size_ = 1;
  size_t fusion_bytes_ = 0;
  size_t fusion_tensor_limit_ = 0;  // the Fuser's: pack_tensor_limit_, or any size without copies
  size_t pack_tensor_limit_ = 0;    // MATEX_FUSION_TENSOR_MAX_BYTES: bigger tensors are fresh, cold gradients
  double cycle_seconds_ = 0;
  double idle_cycle_seconds_ = 0;
  // How long every rank has had nothing pending, counted in configured cycles
  // (the same on every rank). Background thread only.
  double idle_seconds_ = 0;
  static constexpr double kIdleBackoffAfterSeconds = 1.0;
  double stall_warning_seconds_ = 0;
  double stall_shutdown_seconds_ = 0;

  mutable std::mutex mutex_;  // guards the fields down to the thread
  std::condition_variable wake_;
  std::vector<TensorOp> queue_;
  std::unordered_set<std::string> in_flight_;  // submitted and not yet finished
  bool stopping_ = false;
  bool stopped_ = false;
  std::string stop_reason_;  // once stopped: why, for the tensors submitted after (empty: this rank's shutdown)
  EngineStats stats_;
  std::vector<double> idle_samples_;  // the last kIdleSamples idle cycles' coordination times (a ring)

  std::unordered_map<std::string, TensorOp> pending_;  // background thread only
  uint64_t arrivals_ = 0;
  ResponseCache cache_{1u << 16};                      // background thread only
  std::unique_ptr<Coordinator> coordinator_;           // rank 0 only
  std::set<std::string> stall_warned_;                 // rank 0 only
  std::chrono::steady_clock::time_point next_inspection_;  // rank 0: a full cycle is due for the stall inspector
  std::vector<char> fusion_buffer_;
  std::unique_ptr<Timeline> timeline_;  // background thread only; closed after it stops
  PhaseTimes phase_times_;              // filled by comm_'s algorithms while the timeline is on
  std::thread thread_;
};

}  // namespace matexcomm
