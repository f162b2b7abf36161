// backend.h - the c10d backend "matex": torch.distributed collectives on
// libmatexcomm's hierarchical algorithms (shared memory inside a node, MPI
// across), through its C API.
//
// One backend serves one process group. It owns a libmatexcomm communicator
// over the group's ranks (created by the members only), a worker thread that
// runs the group's collectives in issue order, and a progress thread for its
// sends and receives. Every call returns a Work at once; its future works
// (DDP needs it) and its wait() honours the group's timeout.
#pragma once

#include <matexcomm/matexcomm.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "flight_record.h"
#include "group_worker.h"
#include "p2p_progress.h"
#include "torch_compat.h"
#include "work.h"

namespace matex_torch {

class MatexBackend : public c10d::Backend {
 public:
  // Takes ownership of comm, a communicator over the group's ranks in group
  // rank order; `members` are their world ranks. `index` is the group's place
  // in the order of creation.
  MatexBackend(matex_comm_t comm, int rank, int size, std::vector<int> members, std::chrono::milliseconds timeout,
               std::string group_name, uint64_t index);
  // Not collective: a backend dropped without close() (its last reference
  // may die at a garbage collection, at a different moment on every rank)
  // hands its communicator to the world, which frees it in shutdown(), in
  // creation order, on every rank alike.
  ~MatexBackend() override;

  // Finishes queued work and frees the communicator (collective over the
  // group); later calls raise. Idempotent. Releases the GIL while it waits.
  void close();
  // destroy_process_group() calls these on every rank.
  void shutdown() override { close(); }
  void abort() override { close(); }
  uint64_t index() const { return index_; }

  const std::string getBackendName() const override { return "matex"; }
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  c10::intrusive_ptr<Options> getBackendOptions() override;

  // split_group(): c10d calls split() on every rank of this group with a
  // split's members (ranks of this group; their order gives the new ranks).
  // Members create the new communicator among themselves; the others get
  // nullptr at once.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather_into_tensor(
      at::Tensor& output, at::Tensor& input,
      const c10d::GatherOptions& opts = c10d::GatherOptions()) MATEX_OVERRIDE_FROM_TORCH_2_14;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  using Body = std::function<void(matex_comm_t)>;
  // Queues (or runs inline) one collective; `outputs` are what its future
  // holds, `inputs` what it reads (for the flight recorder).
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, const std::string& what,
                                        const std::vector<at::Tensor>& inputs, std::vector<at::Tensor> outputs,
                                        std::chrono::milliseconds timeout, bool async_op, Body body);
  c10::intrusive_ptr<c10d::Work> post_p2p(c10d::OpType type, std::vector<at::Tensor>& tensors, int peer, int tag);
  std::chrono::milliseconds effective(std::chrono::milliseconds timeout) const;
  void require_usable() const;
  Description describe(std::string what) { return {std::move(what), ++sequence_, group_name_, rank_, size_}; }

  matex_comm_t comm_;
  std::vector<int> members_;  // world ranks, in group rank order
  std::shared_ptr<const std::string> group_name_;
  uint64_t index_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<GroupWorker> worker_;
  std::unique_ptr<P2pProgress> p2p_;
  FlightRecord flight_;
  std::atomic<uint64_t> sequence_{0};
  // Shared with the Works, which may outlive the backend.
  struct State {
    std::mutex mutex;
    std::string broken;  // set once a wait expired: the worker may be stuck for good
    bool closed = false;
    // Held shared by every call while it hands its work over (or runs it
    // inline), and exclusively by close() to mark the group closed: a call
    // on another thread either completes its hand-over first or sees the
    // group closed, never a worker or communicator being torn down.
    std::shared_mutex gate;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Throws DistBackendError with matex_last_error() when status is not success.
void check_status(matex_status_t status, const std::string& what);

}  // namespace matex_torch
