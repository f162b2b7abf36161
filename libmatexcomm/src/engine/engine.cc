#include "engine/engine.h"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/scaling.h"

namespace matexcomm {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxNameBytes = 4096;
constexpr size_t kIdleSamples = 4096;
// Word 0 of the cycle's bit vector (MPI_BAND): every rank needs nothing but
// cached responses; every rank has nothing pending.
constexpr uint64_t kCachedBit = 1;
constexpr uint64_t kIdleBit = 2;

bool is_unit(double factor) { return factor == 1.0; }

// The buffer an allreduce reads for `t`: its input, or, with a prescale, its
// output after the input was copied there and scaled.
const void* prescaled_input(const TensorOp& t, matex_dtype_t dtype) {
  if (is_unit(t.prescale)) return t.send;
  if (t.send != t.recv && t.spec.count > 0) std::memcpy(t.recv, t.send, t.spec.count * dtype_size(dtype));
  scale_elements(dtype, t.recv, t.spec.count, t.prescale);
  return t.recv;
}

matex_collective_t collective_of(TensorKind kind) {
  switch (kind) {
    case TensorKind::kAllreduce: return MATEX_COLL_ALLREDUCE;
    case TensorKind::kBroadcast: return MATEX_COLL_BROADCAST;
    case TensorKind::kAllgather: return MATEX_COLL_ALLGATHER;
    case TensorKind::kJoin: break;
  }
  return MATEX_COLL_ALLREDUCE;
}

}  // namespace

Engine::Engine(MPI_Comm parent) : config_(Config::from_environment()) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    MATEX_RAISE(MATEX_ERR_UNSUPPORTED, "the engine needs MPI_THREAD_MULTIPLE (MPI was initialized with a lower "
                                       "thread level); let matex_init initialize MPI or call MPI_Init_thread");
  }
  comm_ = std::make_unique<Communicator>(parent);
  comm_->set_device_blocking(true);  // a completion promises the data is in place
  comm_->set_calls_agreed(true);      // the coordinator's responses: the same calls, in order, everywhere
  control_ = UniqueComm::duplicate(parent);
  rank_ = control_.rank();
  size_ = control_.size();
  fusion_bytes_ = config_.get_bytes("MATEX_FUSION_BYTES");
  pack_tensor_limit_ = config_.get_bytes("MATEX_FUSION_TENSOR_MAX_BYTES");
  fusion_tensor_limit_ = pack_tensor_limit_;
  cycle_seconds_ = static_cast<double>(config_.get_int("MATEX_CYCLE_MS")) / 1000.0;
  idle_cycle_seconds_ = static_cast<double>(config_.get_int("MATEX_IDLE_CYCLE_MS")) / 1000.0;
  stall_warning_seconds_ = config_.get_seconds("MATEX_STALL_WARNING_SECONDS");
  stall_shutdown_seconds_ = config_.get_seconds("MATEX_STALL_SHUTDOWN_SECONDS");
  // Without copies, a big tensor costs nothing to fuse and saves its own call.
  if (comm_->fuses_without_copies()) fusion_tensor_limit_ = fusion_bytes_;
  if (rank_ == 0) coordinator_ = std::make_unique<Coordinator>(size_, fusion_bytes_, fusion_tensor_limit_);
  timeline_ = std::make_unique<Timeline>(config_.get_string("MATEX_TIMELINE"), rank_);
  if (timeline_->active()) comm_->set_phase_times(&phase_times_);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// A shape, where given, has no negative extent and describes the count (an allgather: the rows and
// row_elements); a scalar's empty dimension list is told apart from none by ndim on the C side only.
void Engine::check_shape(const TensorOp& op) const {
  const std::vector<int64_t>& shape = op.spec.shape;
  if (shape.empty()) return;
  const std::string what = "tensor '" + op.name + "': shape";
  uint64_t trailing = 1;  // the product of every extent but the first
  for (size_t i = 0; i < shape.size(); ++i) {
    MATEX_REQUIRE(shape[i] >= 0, MATEX_ERR_INVALID_ARG, what + " has a negative extent " + std::to_string(shape[i]));
    if (i > 0) trailing *= static_cast<uint64_t>(shape[i]);
  }
  const uint64_t first = static_cast<uint64_t>(shape[0]);
  if (op.spec.kind == TensorKind::kAllgather) {
    MATEX_REQUIRE(first == op.spec.count && trailing == op.spec.row_elements, MATEX_ERR_INVALID_ARG,
                  what + " does not match " + op.spec.describe() + " (its first extent is the rows, the others "
                  "multiply to row_elements=" + std::to_string(op.spec.row_elements) + ")");
    return;
  }
  MATEX_REQUIRE(first * trailing == op.spec.count, MATEX_ERR_INVALID_ARG,
                what + " has " + std::to_string(first * trailing) + " elements, not count=" +
                    std::to_string(op.spec.count));
}

void Engine::check(const TensorOp& op) const {
  MATEX_REQUIRE(!op.name.empty(), MATEX_ERR_INVALID_ARG, "tensor name is empty");
  MATEX_REQUIRE(op.name.size() <= kMaxNameBytes, MATEX_ERR_INVALID_ARG,
                "tensor name is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  const std::string what = "tensor '" + op.name + "': ";
  MATEX_REQUIRE((op.spec.kind == TensorKind::kJoin) == (op.name == kJoinName), MATEX_ERR_INVALID_ARG,
                op.spec.kind == TensorKind::kJoin ? "a join goes by the name '" + std::string(kJoinName) + "'"
                                                  : what + "the name is reserved for joins");
  if (op.spec.kind == TensorKind::kJoin) return;
  if (op.refusal_status != MATEX_SUCCESS) {  // no data to check: the reason goes to every rank
    MATEX_REQUIRE(!op.refusal.empty(), MATEX_ERR_INVALID_ARG, what + "a refusal needs a reason");
    return;
  }
  check_shape(op);
  const matex_dtype_t dtype = static_cast<matex_dtype_t>(op.spec.dtype);
  MATEX_REQUIRE(dtype_valid(dtype), MATEX_ERR_INVALID_ARG, what + "dtype " + std::to_string(op.spec.dtype) + " is not a matex_dtype_t");
  const bool has_data = op.spec.count > 0;
  switch (op.spec.kind) {
    case TensorKind::kAllreduce: {
      const matex_op_t reduction = static_cast<matex_op_t>(op.spec.op);
      MATEX_REQUIRE(op_valid(reduction), MATEX_ERR_INVALID_ARG, what + "op " + std::to_string(op.spec.op) + " is not a matex_op_t");
      const std::string problem = reduction_problem(dtype, reduction);
      MATEX_REQUIRE(problem.empty(), MATEX_ERR_INVALID_ARG, what + problem);
      MATEX_REQUIRE(!has_data || (op.send != nullptr && op.recv != nullptr), MATEX_ERR_INVALID_ARG,
                    what + (op.send == nullptr ? "sendbuf" : "recvbuf") + " is NULL");
      MATEX_REQUIRE(dtype_is_floating(dtype) || (is_unit(op.prescale) && is_unit(op.postscale)),
                    MATEX_ERR_INVALID_ARG, what + "prescale and postscale need a floating dtype, not " + dtype_name(dtype));
      break;
    }
    case TensorKind::kBroadcast:
      MATEX_REQUIRE(!has_data || op.recv != nullptr, MATEX_ERR_INVALID_ARG, what + "buffer is NULL");
      MATEX_REQUIRE(op.spec.root >= 0 && op.spec.root < size_, MATEX_ERR_INVALID_ARG,
                    what + "root " + std::to_string(op.spec.root) + " is not a rank (0.." + std::to_string(size_ - 1) + ")");
      break;
    case TensorKind::kAllgather:
      MATEX_REQUIRE(!has_data || op.send != nullptr, MATEX_ERR_INVALID_ARG, what + "sendbuf is NULL");
      MATEX_REQUIRE(op.send != MATEX_IN_PLACE, MATEX_ERR_INVALID_ARG,
                    what + "allgather has no in-place form in the engine (its output is allocated by the engine)");
      MATEX_REQUIRE(op.spec.row_elements >= 1, MATEX_ERR_INVALID_ARG, what + "row_elements must be at least 1");
      break;
    case TensorKind::kJoin: break;
  }
}

void Engine::submit(std::vector<TensorOp> ops) {
  std::unordered_set<std::string> names;
  for (const TensorOp& op : ops) {
    check(op);
    MATEX_REQUIRE(names.insert(op.name).second, MATEX_ERR_INVALID_ARG,
                  "tensor '" + op.name + "' appears twice in one submission");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MATEX_REQUIRE(!stopping_ && !stopped_, MATEX_ERR_NOT_INITIALIZED,
                  "the engine is shut down" + (stop_reason_.empty() ? std::string() : " (" + stop_reason_ + ")"));
    for (const TensorOp& op : ops) {
      MATEX_REQUIRE(in_flight_.count(op.name) == 0, MATEX_ERR_INVALID_ARG,
                    op.name == kJoinName ? "this rank has joined already; it may join again once every rank has"
                                         : "tensor '" + op.name + "' is still in flight; submit a name again only "
                                                                  "after it completed");
    }
    const Clock::time_point now = Clock::now();
    for (TensorOp& op : ops) {
      in_flight_.insert(op.name);
      op.submitted_at = now;
      queue_.push_back(std::move(op));
    }
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStats out = stats_;
  // The median, not the mean: an idle cycle also waits for the slowest rank's
  // timer, and a late wake-up now and then says nothing about the protocol.
  std::vector<double> samples = idle_samples_;
  if (!samples.empty()) {
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
    out.idle_coordination_seconds = samples[samples.size() / 2];
  }
  return out;
}

void Engine::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = EngineStats{};
  idle_samples_.clear();
}

bool Engine::absorb_queue() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (pending_.empty()) {  // with work in flight, go round again at once: others may be ready
    wake_.wait_for(lock, std::chrono::duration<double>(next_cycle_seconds()),
                   [&] { return !queue_.empty() || stopping_; });
  }
  for (TensorOp& op : queue_) {
    // Allgathers never use the cache: their row counts differ between ranks and steps.
    // Nor do refusals: their reason must reach rank 0.
    const bool uncached = op.spec.kind == TensorKind::kAllgather || op.spec.kind == TensorKind::kJoin ||
                          op.refusal_status != MATEX_SUCCESS;
    // Looked up once here: the coordinator needs it (a joined rank stands in for host tensors only), and
    // execute_allreduce picks the host or device path by it.
    if (op.spec.kind == TensorKind::kAllreduce && op.refusal_status == MATEX_SUCCESS && op.recv != nullptr) {
      op.spec.device = comm_->is_device_memory(op.recv);
    }
    op.cache_bit = uncached ? ResponseCache::kNone : cache_.bit_of(op.name, op.spec);
    op.queued_at = Clock::now();
    op.arrival = arrivals_++;
    timeline_->event(op.name, "queue", op.submitted_at, op.queued_at);
    std::string name = op.name;
    pending_.emplace(std::move(name), std::move(op));
  }
  queue_.clear();
  return stopping_;
}

std::vector<Response> Engine::negotiate(bool vote_shutdown, bool* cached) {
  // Word 0 holds 1 when this rank has nothing that needs the full negotiation;
  // the others hold one bit per cached tensor this rank has submitted.
  std::vector<uint64_t> words(1 + (cache_.bit_count() + 63) / 64, 0);
  bool need_full = vote_shutdown;
  const Clock::time_point now = Clock::now();
  for (const auto& [name, op] : pending_) {
    if (op.cache_bit == ResponseCache::kNone) {
      // While this rank has joined, only rank 0 knows for which names it stands in: every cycle is full.
      need_full = need_full || !op.announced || op.spec.kind == TensorKind::kJoin;
      continue;
    }
    words[1 + op.cache_bit / 64] |= uint64_t{1} << (op.cache_bit % 64);
    // A cached tensor that waits long is announced in full once, so that rank 0
    // learns who is missing it.
    const double waited = std::chrono::duration<double>(now - op.queued_at).count();
    const double due = stall_shutdown_seconds_ > 0 ? std::min(stall_warning_seconds_, stall_shutdown_seconds_)
                                                   : stall_warning_seconds_;
    need_full = need_full || (!op.announced && waited >= due);
  }
  // Rank 0 inspects stalls in full cycles only; while names wait, it asks for
  // one now and then (cached cycles alone would never show who is missing).
  if (coordinator_ && coordinator_->has_pending() && now >= next_inspection_) need_full = true;
  words[0] = (need_full ? 0 : kCachedBit) | (pending_.empty() ? kIdleBit : 0);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, words.data(), static_cast<int>(words.size()), MPI_UINT64_T, MPI_BAND,
                          control_.get()),
            "engine MPI_Allreduce of the cache bits");
  *cached = (words[0] & kCachedBit) != 0;
  count_idle_cycle((words[0] & kIdleBit) != 0);
  if (!*cached) return negotiate_in_full(vote_shutdown);
  std::vector<Response> responses;
  Fuser fuser(&responses, fusion_bytes_, fusion_tensor_limit_);
  for (size_t w = 1; w < words.size(); ++w) {
    for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
      const int bit = static_cast<int>((w - 1) * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
      fuser.add(cache_.name(bit), cache_.spec(bit));
      if (coordinator_) coordinator_->forget(cache_.name(bit));
    }
  }
  return responses;
}

void Engine::count_idle_cycle(bool every_rank_idle) {
  // Every rank sees the same AND of the idle bits and adds the same configured
  // cycle, so all switch to the idle cycle at the same negotiation.
  idle_seconds_ = every_rank_idle ? idle_seconds_ + next_cycle_seconds() : 0.0;
}

double Engine::next_cycle_seconds() const {
  return idle_seconds_ >= kIdleBackoffAfterSeconds ? std::max(cycle_seconds_, idle_cycle_seconds_) : cycle_seconds_;
}

std::vector<Response> Engine::negotiate_in_full(bool vote_shutdown) {
  Announcement mine;
  mine.wants_shutdown = vote_shutdown;
  // In submission order: rank 0 runs names in the order they became ready,
  // and the gradients a framework hands over first should run first.
  std::vector<TensorOp*> news;
  for (auto& [name, op] : pending_) {
    if (op.announced && op.cache_bit == ResponseCache::kNone) continue;  // rank 0 has it already
    news.push_back(&op);
  }
  std::sort(news.begin(), news.end(), [](const TensorOp* a, const TensorOp* b) { return a->arrival < b->arrival; });
  for (TensorOp* op : news) {
    mine.entries.push_back({op->name, op->spec, op->refusal_status, op->refusal});
    op->announced = true;
  }
  const std::string sent = mine.encode();
  int length = static_cast<int>(sent.size());
  std::vector<int> lengths(rank_ == 0 ? size_ : 0);
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, control_.get()), "engine MPI_Gather");
  std::vector<int> offsets(lengths.size() + 1, 0);
  for (size_t r = 0; r < lengths.size(); ++r) offsets[r + 1] = offsets[r] + lengths[r];
  std::string gathered(rank_ == 0 ? static_cast<size_t>(offsets.back()) : 0, '\0');
  check_mpi(MPI_Gatherv(sent.data(), length, MPI_BYTE, gathered.data(), lengths.data(), offsets.data(), MPI_BYTE, 0,
                        control_.get()),
            "engine MPI_Gatherv");
  std::string answer;
  if (rank_ == 0) {
    const Clock::time_point now = Clock::now();
    for (int r = 0; r < size_; ++r) {
      coordinator_->add(r, Announcement::decode(gathered.substr(offsets[r], lengths[r])), now);
    }
    inspect_stalls();
    double interval = std::min(1.0, stall_warning_seconds_ / 4);
    if (stall_shutdown_seconds_ > 0) interval = std::min(interval, stall_shutdown_seconds_ / 4);
    next_inspection_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));
    answer = encode_responses(coordinator_->take_responses());
  }
  uint64_t answer_bytes = answer.size();
  check_mpi(MPI_Bcast(&answer_bytes, 1, MPI_UINT64_T, 0, control_.get()), "engine MPI_Bcast");
  answer.resize(answer_bytes);
  check_mpi(MPI_Bcast(answer.data(), static_cast<int>(answer_bytes), MPI_BYTE, 0, control_.get()), "engine MPI_Bcast");
  return decode_responses(answer);
}

void Engine::inspect_stalls() {
  const Clock::time_point now = Clock::now();
  for (const Coordinator::Stalled& s : coordinator_->stalled(now, stall_warning_seconds_)) {
    if (!stall_warned_.insert(s.name).second) continue;
    std::string ranks;
    for (int r : s.missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    MATEX_LOG(LogLevel::kWarn, "engine: tensor '" + s.name + "' has waited " + std::to_string(s.seconds) +
                                   " s for rank(s) " + ranks + " to submit it (MATEX_STALL_WARNING_SECONDS)");
  }
  if (stall_shutdown_seconds_ > 0) coordinator_->fail_stalled(now, stall_shutdown_seconds_);
}

void Engine::loop() {
  // Linux lets a sleeping thread's timer fire up to 50 us late by default; the
  // ranks' idle cycles then meet that far apart. The cycle timer should be exact.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  try {
    for (;;) {
      const bool vote_shutdown = absorb_queue();
      const bool had_work = !pending_.empty();
      const Clock::time_point start = Clock::now();
      bool cached = false;
      const std::vector<Response> responses = negotiate(vote_shutdown, &cached);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.cycles;
        ++(cached ? stats_.cached_cycles : stats_.full_cycles);
        if (cached && !had_work && responses.empty()) {
          if (idle_samples_.size() < kIdleSamples) idle_samples_.push_back(seconds);
          else idle_samples_[stats_.idle_cycles % kIdleSamples] = seconds;
          ++stats_.idle_cycles;
        }
      }
      const Response* shutdown = nullptr;
      for (const Response& response : responses) {
        if (response.type == Response::Type::kShutdown) shutdown = &response;
        else execute(response);
      }
      if (shutdown == nullptr) continue;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_reason_ = shutdown->error;
      }
      fail_everything("the engine was shut down before this tensor completed" +
                      (shutdown->error.empty() ? std::string() : ": " + shutdown->error));
      return;
    }
  } catch (const Error& error) {
    // The coordination itself failed (MPI error): nothing can be matched any more.
    fail_everything("the engine stopped: " + error.message());
  } catch (const std::exception& error) {
    fail_everything(std::string("the engine stopped: ") + error.what());
  }
}

void Engine::fail_everything(const std::string& message) {
  std::vector<TensorOp> queued;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    queued.swap(queue_);
  }
  for (TensorOp& op : queued) pending_.emplace(op.name, std::move(op));
  std::vector<std::string> names;
  for (const auto& entry : pending_) names.push_back(entry.first);
  for (const std::string& name : names) finish(name, MATEX_ERR_NOT_INITIALIZED, message);
}

void Engine::finish(const std::string& name, matex_status_t status, const std::string& message) {
  auto it = pending_.find(name);
  if (it == pending_.end()) return;
  std::shared_ptr<RequestState> state = std::move(it->second.state);
  pending_.erase(it);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_.erase(name);
  }
  if (state) state->complete(status, message);
}

void Engine::execute(const Response& response) {
  // The cache changes with the response, not with the local outcome, so that
  // it stays the same on every rank.
  if (response.type == Response::Type::kError) {
    for (const std::string& name : response.names) {
      cache_.drop(name);
      finish(name, static_cast<matex_status_t>(response.status), response.error);
    }
    return;
  }
  if (response.type == Response::Type::kJoin) {
    finish_join(response);
    return;
  }
  std::vector<TensorOp*> ops;
  StandIns stand_ins(response.names.size());  // a joined rank's zeros for names it did not submit
  phase_times_.clear();
  const Clock::time_point agreed = Clock::now();
  for (size_t i = 0; i < response.names.size(); ++i) {
    const std::string& name = response.names[i];
    auto it = pending_.find(name);
    TensorOp* op = it != pending_.end() ? &it->second : stand_in(response, i, &stand_ins);
    ops.push_back(op);
    if (response.kind != TensorKind::kAllgather) cache_.add(name, op->spec);
    timeline_->event(name, "negotiate", it != pending_.end() ? op->queued_at : agreed, agreed);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.tensors += ops.size();
    stats_.fused_responses += ops.size() > 1 ? 1 : 0;
  }
  try {
    if (response.kind == TensorKind::kAllreduce) execute_allreduce(ops);
    else if (response.kind == TensorKind::kAllgather) execute_allgather(*ops[0], response.rows);
    else execute_broadcast(*ops[0]);
  } catch (const Error& error) {
    for (const std::string& name : response.names) finish(name, error.status(), error.message());
    return;
  } catch (const std::exception& error) {  // out of memory for a fusion or allgather buffer
    for (const std::string& name : response.names) {
      finish(name, MATEX_ERR_SYSTEM, std::string("engine: ") + error.what());
    }
    return;
  }
  for (const std::string& name : response.names) finish(name, MATEX_SUCCESS, "");
}

void Engine::execute_allreduce(const std::vector<TensorOp*>& ops) {
  // A fused response may mix host and device tensors of one dtype and op;
  // each kind takes its own path (host first, on every rank alike).
  std::vector<TensorOp*> on_host;
  std::vector<TensorOp*> on_device;
  for (TensorOp* t : ops) (t->spec.device ? on_device : on_host).push_back(t);  // set in absorb_queue
  if (!on_host.empty()) execute_host_allreduce(on_host);
  if (!on_device.empty()) execute_device_allreduce(on_device);
}

void Engine::execute_host_allreduce(const std::vector<TensorOp*>& ops) {
  const TensorSpec& spec = ops[0]->spec;
  const matex_dtype_t dtype = static_cast<matex_dtype_t>(spec.dtype);
  const matex_op_t op = static_cast<matex_op_t>(spec.op);
  const size_t element = dtype_size(dtype);
  if (ops.size() == 1) {  // alone: straight in the caller's buffers, never through the fusion buffer
    TensorOp& only = *ops[0];
    const void* input = prescaled_input(only, dtype);
    // Tensors too big to fuse are fresh gradients whose outputs are not in cache.
    AllreduceHints hints;
    hints.cold_output = spec.count * element > pack_tensor_limit_;
    const Clock::time_point begin = Clock::now();
    comm_->allreduce(input, only.recv, spec.count, dtype, op, hints);
    record_collective(ops, "allreduce", begin, spec.count * element);
    scale_elements(dtype, only.recv, spec.count, only.postscale);
    return;
  }
  if (comm_->fuses_without_copies()) {
    execute_fused_in_place(ops);
    return;
  }
  size_t total = 0;
  for (const TensorOp* t : ops) total += t->spec.count;
  if (fusion_buffer_.size() < total * element) fusion_buffer_.resize(total * element);
  char* buffer = fusion_buffer_.data();
  const Clock::time_point pack_begin = Clock::now();
  size_t offset = 0;
  for (const TensorOp* t : ops) {  // pack, scaling on the way in
    const size_t bytes = t->spec.count * element;
    if (bytes > 0) std::memcpy(buffer + offset, t->send, bytes);
    scale_elements(dtype, buffer + offset, t->spec.count, t->prescale);
    offset += bytes;
  }
  const Clock::time_point begin = Clock::now();
  for (const TensorOp* t : ops) timeline_->event(t->name, "pack", pack_begin, begin);
  comm_->allreduce(MATEX_IN_PLACE, buffer, total, dtype, op);
  record_collective(ops, "allreduce", begin, total * element);
  const Clock::time_point unpack_begin = Clock::now();
  offset = 0;
  for (const TensorOp* t : ops) {  // unpack, scaling on the way out
    const size_t bytes = t->spec.count * element;
    if (bytes > 0) std::memcpy(t->recv, buffer + offset, bytes);
    scale_elements(dtype, t->recv, t->spec.count, t->postscale);
    offset += bytes;
  }
  const Clock::time_point end = Clock::now();
  for (const TensorOp* t : ops) timeline_->event(t->name, "unpack", unpack_begin, end);
}

void Engine::execute_fused_in_place(const std::vector<TensorOp*>& ops) {
  const TensorSpec& spec = ops[0]->spec;
  const matex_dtype_t dtype = static_cast<matex_dtype_t>(spec.dtype);
  const size_t element = dtype_size(dtype);
  std::vector<BufferPiece> pieces;
  pieces.reserve(ops.size());
  AllreduceHints hints;
  size_t bytes = 0;
  for (const TensorOp* t : ops) {
    pieces.push_back({prescaled_input(*t, dtype), t->recv, t->spec.count});
    bytes += t->spec.count * element;
    hints.cold_output = hints.cold_output || t->spec.count * element > pack_tensor_limit_;
  }
  const Clock::time_point begin = Clock::now();
  comm_->allreduce_pieces(pieces, dtype, static_cast<matex_op_t>(spec.op), hints);
  record_collective(ops, "allreduce", begin, bytes);
  for (const TensorOp* t : ops) scale_elements(dtype, t->recv, t->spec.count, t->postscale);
}

void Engine::execute_device_allreduce(const std::vector<TensorOp*>& ops) {
  const TensorSpec& spec = ops[0]->spec;
  std::vector<ScaledPiece> pieces;
  pieces.reserve(ops.size());
  size_t bytes = 0;
  for (const TensorOp* t : ops) {
    pieces.push_back({t->send, t->recv, t->spec.count, t->prescale, t->postscale});
    bytes += t->spec.bytes();
  }
  const Clock::time_point begin = Clock::now();
  comm_->allreduce_device_tensors(pieces, static_cast<matex_dtype_t>(spec.dtype), static_cast<matex_op_t>(spec.op));
  record_collective(ops, "allreduce", begin, bytes);
}

void Engine::record_collective(const std::vector<TensorOp*>& ops, const char* what, Clock::time_point begin,
                               size_t bytes) {
  if (!timeline_->active()) return;
  const Clock::time_point end = Clock::now();
  const std::string args = "\"algorithm\": \"" + std::string(comm_->last_algorithm(collective_of(ops[0]->spec.kind))) +
                           "\", \"bytes\": " + std::to_string(bytes) + ", \"tensors\": " + std::to_string(ops.size());
  for (const TensorOp* t : ops) {
    timeline_->event(t->name, what, begin, end, args);
    // The algorithm's phases, nested under it: each bar is that phase's total
    // (pipelined phases interleave round by round), laid end to end.
    Clock::time_point at = begin;
    for (int p = 0; p < kPhaseCount; ++p) {
      if (phase_times_.seconds[p] <= 0) continue;
      const Clock::time_point until =
          at + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(phase_times_.seconds[p]));
      timeline_->event(t->name, kPhaseNames[p], at, until);
      at = until;
    }
  }
  phase_times_.clear();
}

void Engine::execute_allgather(TensorOp& op, const std::vector<uint64_t>& rows) {
  const matex_dtype_t dtype = static_cast<matex_dtype_t>(op.spec.dtype);
  const size_t row_bytes = op.spec.row_elements * dtype_size(dtype);
  MATEX_REQUIRE(rows.size() == static_cast<size_t>(size_), MATEX_ERR_INTERNAL, "engine: allgather without every rank's rows");
  std::vector<size_t> counts(rows.size());
  size_t total_rows = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    counts[r] = rows[r] * op.spec.row_elements;
    total_rows += rows[r];
  }
  std::vector<char>& out = op.state->output();
  out.resize(std::max<size_t>(total_rows * row_bytes, 1));
  const Clock::time_point begin = Clock::now();
  comm_->allgatherv(op.send, op.spec.count * op.spec.row_elements, out.data(), counts.data(), nullptr, dtype);
  op.state->output_rows() = total_rows;  // only once it holds the rows
  record_collective({&op}, "allgather", begin, total_rows * row_bytes);
}

void Engine::execute_broadcast(TensorOp& op) {
  const Clock::time_point begin = Clock::now();
  comm_->broadcast(op.recv, op.spec.count, static_cast<matex_dtype_t>(op.spec.dtype), op.spec.root);
  record_collective({&op}, "broadcast", begin, op.spec.bytes());
}

}  // namespace matexcomm
