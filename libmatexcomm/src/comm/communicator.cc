#include "comm/communicator.h"

#include <unistd.h>

#include <climits>
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "comm/argument_checks.h"
#include "comm/communicator_run.h"
#include "comm/config_agreement.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/reduce_kernels.h"
#include "topology/host_cpus.h"
#include "transport/cma_copy.h"

namespace matexcomm {

Communicator::Communicator(MPI_Comm parent) : Communicator(parent, nullptr, nullptr) {}

Communicator::Communicator(MPI_Comm members, const topo::Layout& layout, const topo::HostLoad& host)
    : Communicator(members, &layout, &host) {}

Communicator::Communicator(MPI_Comm parent, const topo::Layout* inherited, const topo::HostLoad* host) {
  std::string config_error;
  try {
    config_ = Config::from_environment();
  } catch (const Error& error) {
    config_error = error.message();
  }
  world_ = UniqueComm::duplicate(parent);
  agree_on_configuration(world_.get(), config_, config_error);
  set_log_level(config_.get_string("MATEX_LOG_LEVEL"));
  const int rank = world_.rank();
  if (inherited != nullptr) {
    // A sub-communicator: log lines keep the parent's rank.
    MATEX_REQUIRE(inherited->world_rank == rank && inherited->world_size == world_.size(), MATEX_ERR_INTERNAL,
                  "the inherited layout describes rank " + std::to_string(inherited->world_rank) + " of " +
                      std::to_string(inherited->world_size) + ", but this is rank " + std::to_string(rank) +
                      " of " + std::to_string(world_.size()));
    layout_ = *inherited;
  } else {
    set_log_rank(rank);
    std::string host_id = topo::make_host_id(config_.get_string("MATEX_HOSTID"));
    layout_ = topo::discover_layout(world_.get(), config_.get_string("MATEX_VIRTUAL_NODES"), host_id);
  }
  groups_ = topo::split_groups(world_.get(), layout_);
  reductions_ = std::make_unique<MpiReductions>();
  streaming_min_bytes_ = config_.get_bytes("MATEX_STREAMING_MIN_BYTES");
  const std::string check_calls = config_.get_string("MATEX_CHECK_CALLS");
  check_calls_ = check_calls == "on" ? CallCheck::kOn : check_calls == "off" ? CallCheck::kOff : CallCheck::kAuto;
  stall_warning_seconds_ = config_.get_seconds("MATEX_STALL_WARNING_SECONDS");
  // Waits pace by the host, not the node: virtual nodes of one host share its cores.
  // The PUs are those its ranks may run on, which launchers and cgroups narrow.
  host_ = host != nullptr ? *host : topo::measure_host_load(world_.get(), layout_);
  check_pace_ = host_.host_has_dedicated_cores() ? BackoffPace::for_dedicated_cores() : BackoffPace::for_shared_cores();

  context_.layout = &layout_;
  context_.world = world_.get();
  context_.node = groups_.node.get();
  context_.rail = groups_.rail.get();
  context_.leaders = groups_.leaders.get();
  context_.reductions = reductions_.get();
  context_.chunk_bytes = choose_chunk_bytes();
  context_.single_copy_block_bytes = ShmNodeChannel::step_bytes(config_.get_bytes("MATEX_CMA_BLOCK_BYTES"));
  setup_shared_memory();
  device_ = DevicePath::create(config_, context_);
  p2p_ = UniqueComm::duplicate(world_.get());
  creation_ = UniqueComm::duplicate(world_.get());
  Selector::Setup selection;
  selection.config = &config_;
  selection.context = &context_;
  selection.world = world_.get();
  selection.cores_shared_anywhere = cores_shared_anywhere_;
  selection.flat_max_across_nodes = kCarriedMaxBytes;
  selection.stall_warning_seconds = stall_warning_seconds_;
  selection.pace = check_pace_;
  selector_ = std::make_unique<Selector>(selection);
  // The calibration's calls are not the caller's: matex_last_algorithm keeps saying none ran.
  const char* last = last_[MATEX_COLL_ALLREDUCE];
  selector_->start([this](size_t bytes, float* send, float* recv) {
    allreduce(send, recv, bytes / sizeof(float), MATEX_FLOAT32, MATEX_SUM);
  });
  last_[MATEX_COLL_ALLREDUCE] = last;
  if (layout_.node_count > 1) {
    watchdog_ = std::make_unique<CollectiveWatchdog>(world_.get(), layout_, stall_warning_seconds_,
                                                     config_.get_seconds("MATEX_TIMEOUT_SECONDS"));
  }
}

Communicator::~Communicator() = default;

size_t Communicator::choose_chunk_bytes() {
  // Rails exchange chunk-sized pieces, so every rank must use the same size.
  int oversubscribed[2] = {host_.node_has_dedicated_cores() ? 0 : 1, host_.host_has_dedicated_cores() ? 0 : 1};
  int anywhere[2] = {0, 0};
  check_mpi(MPI_Allreduce(oversubscribed, anywhere, 2, MPI_INT, MPI_MAX, world_.get()),
            "MPI_Allreduce of core counts");
  cores_shared_anywhere_ = anywhere[1] != 0;
  size_t bytes = config_.get_bytes(anywhere[0] ? "MATEX_SHM_CHUNK_BYTES_OVERSUBSCRIBED" : "MATEX_SHM_CHUNK_BYTES");
  return ShmNodeChannel::step_bytes(bytes);
}

void Communicator::reserve_node_buffers(size_t bytes) {
  if (!shm_ || !failure_.empty()) return;  // a failed communicator refuses the call in run_collective
  try {
    shm_->reserve(bytes);  // on failure the node's peers fail at once (the channel is abandoned)
  } catch (const Error& error) {
    failure_ = error.message();
    if (layout_.node_count > 1) {
      // Ranks on other nodes would wait inside MPI for this node forever.
      MATEX_LOG(LogLevel::kError, error.message() + "; aborting the job, since ranks on other nodes would wait "
                                                    "forever");
      MPI_Abort(world_.get(), 1);
    }
    throw;
  }
}

void Communicator::setup_shared_memory() {
  int ok = 1;
  std::string failure;
  if (config_.get_bool("MATEX_SHM_DISABLE")) {
    ok = 0;
  } else if (layout_.local_size > 1) {
    try {
      std::vector<int> world_ranks;
      for (int r = 0; r < layout_.world_size; ++r) {
        if (layout_.node_of_rank[r] == layout_.node_index) world_ranks.push_back(r);
      }
      // Ranks that outnumber the cores must hand theirs over quickly when they wait.
      ShmWaitPolicy policy{config_.get_seconds("MATEX_TIMEOUT_SECONDS"),
                           config_.get_seconds("MATEX_STALL_WARNING_SECONDS"),
                           host_.host_has_dedicated_cores() ? BackoffPace::for_dedicated_cores()
                                                      : BackoffPace::for_shared_cores()};
      shm_ = std::make_unique<ShmNodeChannel>(context_.node, world_ranks, context_.chunk_bytes, policy);
    } catch (const Error& error) {
      ok = 0;
      failure = error.message();
    } catch (const std::exception& error) {
      ok = 0;
      failure = error.what();
    }
  }
  int single_copy = ok && !config_.get_bool("MATEX_CMA_DISABLE") && probe_single_copy() ? 1 : 0;
  // Every rank must make the same choices, so agree on them.
  int mine[2] = {ok, single_copy};
  int all[2] = {0, 0};
  check_mpi(MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, world_.get()), "MPI_Allreduce of shm status");
  context_.hierarchical_ok = all[0] == 1;
  context_.single_copy_ok = all[1] == 1;
  if (!failure.empty()) MATEX_LOG(LogLevel::kWarn, "shared memory unavailable, using flat MPI: " + failure);
  if (!context_.hierarchical_ok) shm_.reset();
  context_.shm = shm_.get();
  context_.scratch = &scratch_;
}

bool Communicator::probe_single_copy() {
  if (layout_.local_size == 1) return true;
  // Each rank shows a buffer holding a pattern only it knows; every rank must
  // read each neighbour's pattern through process_vm_readv.
  const uint64_t magic = 0x6d617465782d636dull;
  uint64_t pattern[2] = {magic, static_cast<uint64_t>(layout_.world_rank)};
  uint64_t mine[3] = {static_cast<uint64_t>(::getpid()), reinterpret_cast<uint64_t>(pattern),
                      static_cast<uint64_t>(layout_.world_rank)};
  std::vector<uint64_t> all(3 * layout_.local_size);
  check_mpi(MPI_Allgather(mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, context_.node),
            "MPI_Allgather of cross-memory attach probes");
  int readable = 1;
  for (int l = 0; l < layout_.local_size; ++l) {
    if (l == layout_.local_rank) continue;
    uint64_t expected[2] = {magic, all[3 * l + 2]};
    if (!cma_probe(static_cast<pid_t>(all[3 * l]), reinterpret_cast<const void*>(all[3 * l + 1]), expected,
                   sizeof expected)) {
      readable = 0;
    }
  }
  // Nobody may leave (and free `pattern`) before every neighbour has probed it.
  int node_readable = 0;
  check_mpi(MPI_Allreduce(&readable, &node_readable, 1, MPI_INT, MPI_MIN, context_.node),
            "MPI_Allreduce of cross-memory attach probes");
  if (!node_readable) {
    MATEX_LOG(LogLevel::kInfo, "cross-memory attach is not usable on this node; using two-copy shared memory");
  }
  return node_readable == 1;
}

int Communicator::collective_index(matex_collective_t coll) {
  int index = static_cast<int>(coll);
  if (index == MATEX_COLL_REDUCE) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "coll = MATEX_COLL_REDUCE has no algorithm choice");
  }
  if (index < 0 || index > 3) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "coll = " + std::to_string(index) + " is not a matex_collective_t");
  }
  return index;
}

void Communicator::set_algorithm(matex_collective_t coll, const char* name) {
  // Check locally, but agree with every rank before raising, so that a rank
  // with a bad argument never leaves the others waiting.
  std::string problem;
  int index = static_cast<int>(coll);
  if (index < 0 || index > 3) {
    problem = "coll = " + std::to_string(index) + " is not a matex_collective_t";
  } else if (name == nullptr) {
    problem = "name is NULL";
  } else {
    std::string list;
    bool known = false;
    for (const std::string& candidate : algorithm_names(coll)) {
      known = known || candidate == name;
      list += (list.empty() ? "" : ", ") + candidate;
    }
    if (!known) problem = std::string("name = \"") + name + "\" is not an algorithm of this collective (" + list + ")";
  }
  uint64_t digest = problem.empty() ? stable_digest(std::to_string(index) + ":" + name) : 0;
  bool invalid = false;
  int other = find_disagreeing_rank(world_.get(), digest, &invalid);
  if (!problem.empty()) MATEX_RAISE(MATEX_ERR_INVALID_ARG, problem);
  if (other >= 0 && invalid) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "rank " + std::to_string(other) +
                                           " passed an invalid collective or algorithm name to matex_set_algorithm; "
                                           "no rank changed its algorithm");
  }
  if (other >= 0) {
    MATEX_RAISE(MATEX_ERR_MISMATCH, std::string("matex_set_algorithm(\"") + name + "\") differs from rank " +
                                        std::to_string(other) + "'s choice; every rank must choose the same "
                                        "algorithm, and none changed it");
  }
  selector_->set_choice(coll, name);
}

const char* Communicator::last_algorithm(matex_collective_t coll) const {
  return last_[collective_index(coll)];
}

const char* Communicator::auto_algorithm(matex_collective_t coll, size_t bytes) const {
  return selector_->auto_algorithm(coll, bytes);
}

std::string Communicator::describe_selection() const { return selector_->describe(); }

TuningIdentity Communicator::tuning_identity() const { return selector_->tuning_identity(); }

void Communicator::record_allreduce(const Selector::AllreducePick& pick, size_t bytes, double seconds,
                                    bool in_place) {
  try {
    selector_->record_allreduce(pick, bytes, seconds, in_place, sequence_);
  } catch (const std::exception& error) {
    // This rank's trials may now be out of step with the others': no further call may run.
    failure_ = std::string("the allreduce trials failed: ") + error.what();
    if (shm_) shm_->abandon();
    throw;
  }
}

void Communicator::allreduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op,
                             const AllreduceHints& hints) {
  require_reduction(dtype, op);
  if (send == MATEX_IN_PLACE) send = recv;
  require_buffer(send, count, "sendbuf");
  require_buffer(recv, count, "recvbuf");
  size_t bytes = checked_bytes(count, dtype, "count");
  if (is_device_memory(send) || is_device_memory(recv)) {
    run_collective(reduction_call(CallKind::kAllreduce, count, dtype, op),
                   [&] { last_[MATEX_COLL_ALLREDUCE] = device_->allreduce(*this, send, recv, count, dtype, op); });
    return;
  }
  const Selector::AllreducePick pick = selector_->pick_allreduce(bytes, send == recv, hints);
  const int chosen = pick.algorithm;
  const bool cold = hints.cold_output && send != recv;
  const AlgorithmInfo& algorithm = algorithm_info(MATEX_COLL_ALLREDUCE, chosen);
  last_[MATEX_COLL_ALLREDUCE] = algorithm.name;
  // Under auto on one node flat compares the call in shared memory too
  // (allreduce_flat.cc): auto's table may give a neighbour's size to a
  // shared-memory algorithm, and the two must meet in one place.
  const bool flat_meets_in_node = shm_ != nullptr && layout_.node_count == 1 && !algorithm.hierarchical &&
                                  selector_->allreduce_is_auto();
  const bool compared_inside_node = shm_ != nullptr && (algorithm.hierarchical || flat_meets_in_node);
  const CallSignature call = reduction_call(CallKind::kAllreduce, count, dtype, op);
  // Before the algorithm (which reserves too), so that a trial's clock does not time it.
  if (shm_ != nullptr && algorithm.hierarchical && !algorithm.single_copy) reserve_node_buffers(bytes);
  const double started = pick.clocked ? MPI_Wtime() : 0;
  // A small flat allreduce that gets the call check rides along with it: one
  // exchange instead of the check and then MPI's own call (call_agreement.h).
  const bool carried = chosen == kAllreduceFlat && bytes <= kCarriedMaxBytes &&
                       call_check_due(compared_inside_node);
  run_collective(call, [&] {
    if (carried) {
      const CarriedData data{send, recv, count, dtype, op};
      agree_call(call_check_comms(), sequence_, call, &data);
      if (op == MATEX_AVG) divide_elements(dtype, recv, count, layout_.world_size);
      return;
    }
    // Even with count 0 the hierarchical algorithms meet their local peers, so
    // a rank whose count differs is told rather than silently skipped.
    // In place, the output lines were just read and are in cache: no read-for-ownership to save.
    const bool streaming = send != recv && (bytes >= streaming_min_bytes_ || cold);
    AllreduceArgs args{send, recv, count, dtype, op, chosen, sequence_, streaming};
    args.meet_in_node = flat_meets_in_node;
    allreduce_function(chosen)(context_, args);
  }, compared_inside_node, carried);
  // Every call that takes part is counted, timed or not.
  if (pick.takes_part) record_allreduce(pick, bytes, pick.clocked ? MPI_Wtime() - started : 0, send == recv);
}

bool Communicator::fuses_without_copies() const { return selector_->fuses_without_copies(); }

void Communicator::allreduce_pieces(const std::vector<BufferPiece>& pieces, matex_dtype_t dtype, matex_op_t op,
                                    const AllreduceHints& hints) {
  if (!fuses_without_copies()) {
    for (const BufferPiece& piece : pieces) allreduce(piece.send, piece.recv, piece.count, dtype, op, hints);
    return;
  }
  require_reduction(dtype, op);
  size_t count = 0;
  bool any_in_place = false;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string which = "pieces[" + std::to_string(i) + "]";
    require_buffer(pieces[i].send, pieces[i].count, (which + ".send").c_str());
    require_buffer(pieces[i].recv, pieces[i].count, (which + ".recv").c_str());
    any_in_place = any_in_place || pieces[i].send == pieces[i].recv;
    count += pieces[i].count;
  }
  const size_t bytes = checked_bytes(count, dtype, "count");
  const int chosen_under_auto = selector_->auto_allreduce(bytes, any_in_place);
  if (selector_->allreduce_is_auto() && chosen_under_auto != kAllreduceRsArAg &&
      chosen_under_auto != kAllreduceRsArAgCma) {
    // Auto wants flat or the small family, which need one buffer: pack, reduce
    // in place (the same choice: placement only moves rail bands), unpack.
    const size_t element = dtype_size(dtype);
    char* packed = fused_scratch_.reserve(bytes);
    size_t at = 0;
    for (const BufferPiece& piece : pieces) {
      if (piece.count > 0) std::memcpy(packed + at, piece.send, piece.count * element);
      at += piece.count * element;
    }
    allreduce(packed, packed, count, dtype, op, hints);
    at = 0;
    for (const BufferPiece& piece : pieces) {
      if (piece.count > 0) std::memcpy(piece.recv, packed + at, piece.count * element);
      at += piece.count * element;
    }
    return;
  }
  const int chosen = kAllreduceRsArAg;
  last_[MATEX_COLL_ALLREDUCE] = algorithm_info(MATEX_COLL_ALLREDUCE, chosen).name;
  reserve_node_buffers(bytes);
  run_collective(reduction_call(CallKind::kAllreduce, count, dtype, op), [&] {
    const bool streaming = !any_in_place && (bytes >= streaming_min_bytes_ || hints.cold_output);
    AllreduceArgs args{nullptr, nullptr, count, dtype, op, chosen, sequence_, streaming};
    args.pieces = pieces.data();
    args.piece_count = pieces.size();
    allreduce_rs_ar_ag(context_, args);
  }, shm_ != nullptr);
}

void Communicator::broadcast(void* buffer, size_t count, matex_dtype_t dtype, int root) {
  require_dtype(dtype, "dtype");
  require_buffer(buffer, count, "buffer");
  const size_t bytes = checked_bytes(count, dtype, "count");
  if (root < 0 || root >= layout_.world_size) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "root = " + std::to_string(root) + " is not a rank of this communicator (0.." +
                                           std::to_string(layout_.world_size - 1) + ")");
  }
  if (is_device_memory(buffer)) {
    run_collective(rooted_call(CallKind::kBroadcast, count, dtype, root),
                   [&] { last_[MATEX_COLL_BROADCAST] = device_->broadcast(*this, buffer, count, dtype, root); });
    return;
  }
  const int chosen = selector_->pick_broadcast(bytes);
  last_[MATEX_COLL_BROADCAST] = algorithm_info(MATEX_COLL_BROADCAST, chosen).name;
  run_collective(rooted_call(CallKind::kBroadcast, count, dtype, root), [&] {
    if (count == 0) return;
    broadcast_function(chosen)(context_, buffer, count, dtype, root);
  });
}

void Communicator::allgatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts,
                              const size_t* displs, matex_dtype_t dtype) {
  require_dtype(dtype, "dtype");
  MATEX_REQUIRE(recvcounts != nullptr, MATEX_ERR_INVALID_ARG, "recvcounts is NULL");
  const int p = layout_.world_size;
  const int me = layout_.world_rank;
  std::vector<size_t> counts(recvcounts, recvcounts + p);
  std::vector<size_t> offsets(p);
  size_t total = 0;
  size_t extent = 0;
  for (int r = 0; r < p; ++r) {
    offsets[r] = displs != nullptr ? displs[r] : total;
    require_int_count(counts[r], ("recvcounts[" + std::to_string(r) + "]").c_str());
    require_int_count(offsets[r], ("displs[" + std::to_string(r) + "]").c_str());
    total += counts[r];
    extent = std::max(extent, offsets[r] + counts[r]);
  }
  if (sendcount != counts[me]) {
    MATEX_RAISE(MATEX_ERR_INVALID_ARG, "sendcount = " + std::to_string(sendcount) + " but recvcounts[" +
                                           std::to_string(me) + "] = " + std::to_string(counts[me]));
  }
  char* recv_bytes = static_cast<char*>(recv);
  const size_t element = dtype_size(dtype);
  if (send == MATEX_IN_PLACE || (recv != nullptr && send == recv_bytes + offsets[me] * element)) send = nullptr;
  else require_buffer(send, sendcount, "sendbuf");
  require_buffer(recv, extent, "recvbuf");
  checked_bytes(extent, dtype, "recvcounts");
  const CallSignature call = data_call(CallKind::kAllgather, total, dtype);
  if (is_device_memory(send) || is_device_memory(recv)) {
    run_collective(call, [&] {
      if (total == 0) return;
      last_[MATEX_COLL_ALLGATHER] = device_->allgatherv(*this, send, sendcount, recv, counts, offsets, dtype);
    });
    return;
  }
  last_[MATEX_COLL_ALLGATHER] = "flat";
  run_collective(call, [&] {
    if (total == 0) return;
    allgatherv_flat(context_, send, recv, counts, offsets, dtype);
  });
}

void Communicator::allgather(const void* send, void* recv, size_t count, matex_dtype_t dtype) {
  std::vector<size_t> counts(layout_.world_size, count);
  allgatherv(send, count, recv, counts.data(), nullptr, dtype);
}

void Communicator::reduce_scatter(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                                  matex_op_t op) {
  require_reduction(dtype, op);
  require_int_count(recvcount, "recvcount");
  checked_bytes(recvcount * static_cast<size_t>(layout_.world_size), dtype, "recvcount * size");
  const bool in_place = send == MATEX_IN_PLACE || (send != nullptr && send == recv);
  if (!in_place) require_buffer(send, recvcount * layout_.world_size, "sendbuf");
  require_buffer(recv, recvcount, "recvbuf");
  const CallSignature call = reduction_call(CallKind::kReduceScatter, recvcount, dtype, op);
  if ((!in_place && is_device_memory(send)) || is_device_memory(recv)) {
    run_collective(call, [&] {
      if (recvcount == 0) return;
      last_[MATEX_COLL_REDUCE_SCATTER] =
          device_->reduce_scatter(*this, in_place ? nullptr : send, recv, recvcount, dtype, op);
    });
    return;
  }
  last_[MATEX_COLL_REDUCE_SCATTER] = "flat";
  run_collective(call, [&] {
    if (recvcount == 0) return;
    reduce_scatter_flat(context_, in_place ? nullptr : send, recv, recvcount, dtype, op);
  });
}

void Communicator::set_cuda_stream(void* stream) {
  if (device_) {
    device_->set_stream(stream);
    return;
  }
  MATEX_REQUIRE(stream == nullptr, MATEX_ERR_UNSUPPORTED,
                "stream: this build of libmatexcomm has no CUDA (configure with MATEX_WITH_CUDA=ON)");
}

void Communicator::allreduce_device_tensors(const std::vector<ScaledPiece>& pieces, matex_dtype_t dtype,
                                            matex_op_t op) {
  require_reduction(dtype, op);
  MATEX_REQUIRE(device_ != nullptr, MATEX_ERR_UNSUPPORTED, "device tensors need a build of libmatexcomm with CUDA");
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string which = "tensor " + std::to_string(i) + " of the fused allreduce";
    MATEX_REQUIRE(is_device_memory(pieces[i].send) && is_device_memory(pieces[i].recv), MATEX_ERR_INVALID_ARG,
                  which + ": its buffers are not both in device memory, unlike the first tensor's");
    checked_bytes(pieces[i].count, dtype, "count");
  }
  size_t total = 0;
  for (const ScaledPiece& piece : pieces) total += piece.count;
  run_collective(reduction_call(CallKind::kAllreduce, total, dtype, op),
                 [&] { last_[MATEX_COLL_ALLREDUCE] = device_->allreduce_fused(*this, pieces, dtype, op); });
}

void Communicator::barrier() {
  run_collective(CallSignature{CallKind::kBarrier}, [&] { check_mpi(MPI_Barrier(world_.get()), "MPI_Barrier"); });
}

}  // namespace matexcomm
