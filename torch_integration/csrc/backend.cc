// backend.cc - life cycle, the launch of one collective, and the reductions
// that keep one tensor in place (allreduce, reduce) plus broadcast and barrier.
#include "backend.h"

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <mpi.h>

#include <cstdio>

#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>

#include "dense_buffer.h"
#include "tensor_types.h"
#include "world.h"

namespace matex_torch {

void check_status(matex_status_t status, const std::string& what) {
  if (status == MATEX_SUCCESS) return;
  C10_THROW_ERROR(DistBackendError, "matex: " + what + " failed (" + matex_status_string(status) +
                                        "): " + matex_last_error());
}

namespace {

// The current CUDA stream of the tensors' device, on the calling thread
// (streams are per thread), when the call's tensors are on a GPU.
std::optional<c10::Stream> cuda_stream_of(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.defined() || !tensor.is_cuda()) continue;
    return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(tensor.device());
  }
  return std::nullopt;
}

// One tensor reduced in place (a pre-multiplied sum or an op), then written
// back to the tensor if it was reduced through a contiguous copy.
void allreduce_in_place(matex_comm_t comm, const DenseBuffer& buffer, matex_dtype_t dtype, const Reduction& reduction,
                        const std::string& what) {
  if (reduction.premultiplied && buffer.on_device()) {
    // libmatexcomm's pre-multiplied sum is host-only: scale on the stream, then sum.
    buffer.dense().mul_(reduction.factor);
    check_status(matex_allreduce(comm, MATEX_IN_PLACE, buffer.data(), buffer.numel(), dtype, MATEX_SUM),
                 what + " (PREMUL_SUM)");
  } else if (reduction.premultiplied) {
    check_status(matex_allreduce_premul_sum(comm, MATEX_IN_PLACE, buffer.data(), buffer.numel(), dtype,
                                            reduction.factor),
                 what + " (PREMUL_SUM)");
  } else {
    check_status(matex_allreduce(comm, MATEX_IN_PLACE, buffer.data(), buffer.numel(), dtype, reduction.op), what);
  }
  buffer.write_back();
}

}  // namespace

MatexBackend::MatexBackend(matex_comm_t comm, int rank, int size, std::vector<int> members,
                           std::chrono::milliseconds timeout, std::string group_name, uint64_t index)
    : c10d::Backend(rank, size),
      comm_(comm),
      members_(std::move(members)),
      group_name_(std::make_shared<const std::string>(std::move(group_name))),
      index_(index),
      timeout_(timeout),
      worker_(std::make_unique<GroupWorker>()),
      p2p_(std::make_unique<P2pProgress>()),
      flight_(index_, members_, members_[rank]) {}

MatexBackend::~MatexBackend() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->closed) return;
    state_->closed = true;
  }
  // Shared pointers, so the closer can be copied into a std::function.
  std::shared_ptr<GroupWorker> worker(std::move(worker_));
  std::shared_ptr<P2pProgress> p2p(std::move(p2p_));
  matex_comm_t comm = comm_;
  std::shared_ptr<State> state = state_;
  defer_close(index_, [worker, p2p, comm, state]() mutable {
    std::string broken;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      broken = state->broken;
    }
    if (!broken.empty() && !worker->wait_idle(std::chrono::seconds(5))) {
      worker->abandon();
      new std::shared_ptr<GroupWorker>(worker);  // left to the process's exit, as in close()
      new std::shared_ptr<P2pProgress>(p2p);
      return false;
    }
    worker.reset();
    p2p.reset();
    matex_finalize(&comm);
    return true;
  });
}

void MatexBackend::close() {
  TORCH_CHECK(!worker_ || !worker_->on_worker_thread(), "matex: process group ", *group_name_,
              " cannot be shut down from a callback of its own work (it runs on the group's thread)");
  // Queued jobs may run Python callbacks (futures' then), which need the GIL,
  // and a call on another thread may be handing work over.
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
  std::string broken;
  {
    std::unique_lock<std::shared_mutex> gate(state_->gate);
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->closed) return;
    state_->closed = true;
    broken = state_->broken;
  }
  // A late peer may still be finishing the call whose wait expired.
  if (!broken.empty() && !worker_->wait_idle(std::chrono::seconds(5))) {
    // The worker is blocked in a collective that may never end: leave it
    // (and the communicator it uses) to the process's exit.
    worker_->abandon();
    (void)worker_.release();
    (void)p2p_.release();
    note_abandoned();
    return;
  }
  worker_.reset();
  p2p_.reset();
  matex_finalize(&comm_);
}

std::chrono::milliseconds MatexBackend::effective(std::chrono::milliseconds timeout) const {
  // Ten years stands for "no limit": larger values would overflow the clocks.
  constexpr std::chrono::milliseconds kLongest = std::chrono::hours(24 * 365 * 10);
  const std::chrono::milliseconds chosen =
      timeout == c10d::kUnsetTimeout || timeout <= std::chrono::milliseconds::zero() ? timeout_ : timeout;
  return std::min(chosen, kLongest);
}

void MatexBackend::require_usable() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  TORCH_CHECK(!state_->closed, "matex: process group ", *group_name_, " was shut down");
  if (!state_->broken.empty()) {
    C10_THROW_ERROR(DistBackendError, "matex: process group " + *group_name_ +
                                          " is unusable since an earlier wait expired: " + state_->broken);
  }
}


c10::intrusive_ptr<c10d::Work> MatexBackend::launch(c10d::OpType type, const std::string& what,
                                                    const std::vector<at::Tensor>& inputs,
                                                    std::vector<at::Tensor> outputs,
                                                    std::chrono::milliseconds timeout, bool async_op, Body body) {
  std::shared_lock<std::shared_mutex> gate(state_->gate);
  require_usable();
  Description description = describe(what);
  const std::chrono::milliseconds limit = effective(timeout);
  FlightEntry flight = flight_.record(*this, what, description.sequence, inputs, outputs, limit, /*p2p=*/false);
  const std::optional<c10::Stream> stream = cuda_stream_of(outputs);
  auto completion = std::make_shared<Completion>(std::move(outputs), stream);
  matex_comm_t comm = comm_;
  std::function<void()> job = [completion, comm, stream, flight, body = std::move(body)]() mutable {
    // The torch ops of a job (copies, scaling) act on buffers, not on the
    // autograd graph, whichever thread runs them.
    at::NoGradGuard no_grad;
    try {
      // CUDA tensors: the collective, and the torch ops around it, run on
      // the stream that was current where it was called, in its order.
      std::optional<c10::StreamGuard> on_stream;
      if (stream) {
        on_stream.emplace(*stream);
        check_status(matex_comm_set_cuda_stream(comm, stream->native_handle()), "setting the CUDA stream");
      }
      flight.started();
      body(comm);
      completion->record_on_stream();
      flight.completed();
      completion->succeed();
    } catch (...) {
      completion->fail(std::current_exception());
    }
  };
  if (worker_->on_worker_thread()) {
    // Called from a callback of an earlier Work's future, which runs on the
    // worker after its job: the communicator is free, and queueing would
    // wait on this very thread. Run it now.
    job();
    return c10::make_intrusive<MatexWork>(rank_, type, completion, limit, description, nullptr);
  }
  if (!async_op) {
    // The caller waits at once: run it here. If it overruns, the caller is
    // stuck inside it and cannot raise, so the job ends, saying why (as
    // NCCL's watchdog does).
    auto expiry = [this, what = description.what, sequence = description.sequence, limit] {
      std::fprintf(stderr,
                   "matex: %s did not complete within %.3f s; a rank may have skipped this call, called another "
                   "collective, or died. Ending the job, since this rank is blocked inside it.\n",
                   Description{what, sequence, group_name_, rank_, size_}.text().c_str(), limit.count() / 1000.0);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    };
    if (worker_->try_run_inline(job, GroupWorker::Clock::now() + limit, expiry)) {
      return c10::make_intrusive<MatexWork>(rank_, type, completion, limit, description, nullptr);
    }
  }
  worker_->submit(std::move(job));
  std::weak_ptr<State> state = state_;
  return c10::make_intrusive<MatexWork>(rank_, type, completion, limit, description,
                                        [state](const std::string& message) {
                                          if (auto live = state.lock()) {
                                            std::lock_guard<std::mutex> lock(live->mutex);
                                            if (live->broken.empty()) live->broken = message;
                                          }
                                        });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "matex: allreduce takes one tensor per process, got ", tensors.size());
  DenseBuffer buffer(tensors[0], "allreduce");
  const matex_dtype_t dtype = reduction_dtype(tensors[0].scalar_type(), "allreduce");
  const Reduction reduction = reduction_of(opts.reduceOp, tensors[0].scalar_type(), "allreduce");
  return launch(c10d::OpType::ALLREDUCE, "allreduce", tensors, tensors, opts.timeout, opts.asyncOp,
                [buffer, dtype, reduction](matex_comm_t comm) {
                  allreduce_in_place(comm, buffer, dtype, reduction, "allreduce");
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                 const c10d::AllreduceCoalescedOptions& opts) {
  struct Item {
    DenseBuffer buffer;
    matex_dtype_t dtype;
    Reduction reduction;
  };
  std::vector<Item> items;
  items.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    require_usable_tensor(tensor, "allreduce_coalesced", tensors.front().device());
    items.push_back({DenseBuffer(tensor, "allreduce_coalesced"),
                     reduction_dtype(tensor.scalar_type(), "allreduce_coalesced"),
                     reduction_of(opts.reduceOp, tensor.scalar_type(), "allreduce_coalesced")});
  }
  return launch(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors, tensors, opts.timeout, opts.asyncOp,
                [items](matex_comm_t comm) {
                  for (const Item& item : items) {
                    allreduce_in_place(comm, item.buffer, item.dtype, item.reduction, "allreduce_coalesced");
                  }
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::reduce(std::vector<at::Tensor>& tensors,
                                                    const c10d::ReduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "matex: reduce takes one tensor per process, got ", tensors.size());
  TORCH_CHECK(opts.rootTensor == 0, "matex: reduce takes rootTensor 0, got ", opts.rootTensor);
  DenseBuffer buffer(tensors[0], "reduce", /*device_ok=*/false);
  const matex_dtype_t dtype = reduction_dtype(tensors[0].scalar_type(), "reduce");
  const Reduction reduction = reduction_of(opts.reduceOp, tensors[0].scalar_type(), "reduce");
  const int root = static_cast<int>(opts.rootRank);
  const bool at_root = root == rank_;
  return launch(c10d::OpType::REDUCE, "reduce", tensors, tensors, opts.timeout, opts.asyncOp,
                [buffer, dtype, reduction, root, at_root](matex_comm_t comm) {
                  // A pre-multiplied sum: scale a copy of the input, then sum.
                  at::Tensor scaled = reduction.premultiplied ? buffer.dense() * reduction.factor : at::Tensor();
                  const void* send = reduction.premultiplied ? scaled.data_ptr() : buffer.data();
                  if (at_root && !reduction.premultiplied) send = MATEX_IN_PLACE;
                  check_status(matex_reduce(comm, send, at_root ? buffer.data() : nullptr, buffer.numel(), dtype,
                                            reduction.premultiplied ? MATEX_SUM : reduction.op, root),
                               "reduce");
                  if (at_root) buffer.write_back();
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                       const c10d::BroadcastOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "matex: broadcast takes one tensor per process, got ", tensors.size());
  TORCH_CHECK(opts.rootTensor == 0, "matex: broadcast takes rootTensor 0, got ", opts.rootTensor);
  DenseBuffer buffer(tensors[0], "broadcast");
  const Movement movement = movement_of(tensors[0].scalar_type());
  const int root = static_cast<int>(opts.rootRank);
  return launch(c10d::OpType::BROADCAST, "broadcast", tensors, tensors, opts.timeout, opts.asyncOp,
                [buffer, movement, root](matex_comm_t comm) {
                  check_status(matex_broadcast(comm, buffer.data(), buffer.numel() * movement.per_element,
                                               movement.dtype, root),
                               "broadcast");
                  buffer.write_back();
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::barrier(const c10d::BarrierOptions& opts) {
  return launch(c10d::OpType::BARRIER, "barrier", {}, {}, opts.timeout, opts.asyncOp,
                [](matex_comm_t comm) { check_status(matex_barrier(comm), "barrier"); });
}

}  // namespace matex_torch
