#include "comm/collective_watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <set>
#include <utility>

#include "core/logging.h"

namespace matexcomm {

namespace {

constexpr int kPingTag = 1;
constexpr int kPongTag = 2;
constexpr auto kIdleTick = std::chrono::milliseconds(100);
constexpr auto kBusyTick = std::chrono::milliseconds(1);
constexpr double kBusySeconds = 0.2;  // after a ping arrived: its payload's pong must not wait for a tick
// 1 MiB crosses 100 Mbit/s in 0.084 s and 1 Gbit/s in 0.008 s, past tc's bursts and socket buffers.
constexpr size_t kSpeedProbeBytes = size_t{1} << 20;
constexpr int kSpeedProbeNodes = 16;
constexpr double kWarningWindowSeconds = 5;  // a payload may queue behind a slow link's data
constexpr double kAbortGraceSeconds = 0.5;

double seconds_since(CollectiveWatchdog::Clock::time_point start) {
  return std::chrono::duration<double>(CollectiveWatchdog::Clock::now() - start).count();
}

double seconds_between(CollectiveWatchdog::Clock::time_point from, CollectiveWatchdog::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Live watchdogs, stopped when MPI_Finalize begins (the deletion of an attribute of MPI_COMM_SELF), in
// case a program finalizes MPI before it finalizes matex: no thread of ours may call MPI after that.
// Never freed: a watchdog may stop during the process's exit, after static destructors ran.
struct LiveWatchdogs {
  std::mutex mutex;
  std::set<CollectiveWatchdog*> all;
};
LiveWatchdogs& live_watchdogs() {
  static auto* live = new LiveWatchdogs;
  return *live;
}

int stop_watchdogs_at_finalize(MPI_Comm, int, void*, void*) {
  LiveWatchdogs& live = live_watchdogs();
  std::lock_guard<std::mutex> lock(live.mutex);
  for (CollectiveWatchdog* watchdog : live.all) watchdog->stop();
  return MPI_SUCCESS;
}

void stop_at_finalize(CollectiveWatchdog* watchdog) {
  static std::once_flag hooked;
  std::call_once(hooked, [] {
    int key = MPI_KEYVAL_INVALID;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, stop_watchdogs_at_finalize, &key, nullptr) == MPI_SUCCESS) {
      MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    }
  });
  LiveWatchdogs& live = live_watchdogs();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.all.insert(watchdog);
}

// Requests that may never complete (a send to, or a receive from, a peer that is gone): MPI may still
// touch their buffers, so those are kept for the life of the process.
struct Abandoned {
  std::mutex mutex;
  std::list<std::vector<char>> buffers;
};
Abandoned& abandoned() {
  static auto* kept = new Abandoned;
  return *kept;
}

int lowest_rank_of(const topo::Layout& layout, int node) {
  for (int r = 0; r < layout.world_size; ++r) {
    if (layout.node_of_rank[r] == node) return r;
  }
  return -1;
}

std::vector<int> other_nodes(const topo::Layout& layout) {
  std::vector<int> nodes;
  for (int node = 0; node < layout.node_count; ++node) {
    if (node != layout.node_index) nodes.push_back(node);
  }
  return nodes;
}

}  // namespace

CollectiveWatchdog::CollectiveWatchdog(MPI_Comm comm, const topo::Layout& layout, double warn_seconds,
                                       double timeout_seconds)
    : layout_(layout),
      warn_seconds_(warn_seconds),
      timeout_seconds_(timeout_seconds),
      window_seconds_(std::clamp(0.2 * timeout_seconds, 0.5, 3.0)),
      heard_(static_cast<size_t>(layout.node_count)) {
  // Every rank probes, or none: a rank that cannot would leave the others' pings unanswered.
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  int multiple = provided >= MPI_THREAD_MULTIPLE ? 1 : 0;
  int everywhere = 0;
  MPI_Allreduce(&multiple, &everywhere, 1, MPI_INT, MPI_MIN, comm);
  can_probe_ = everywhere != 0;
  if (can_probe_) {
    probes_ = UniqueComm::duplicate(comm);
    MPI_Comm_set_errhandler(probes_.get(), MPI_ERRORS_RETURN);  // a dead peer must not end this rank here
  }
  next_timeout_check_ = timeout_seconds_ - window_seconds_;
  thread_ = std::thread([this] { run(); });
  stop_at_finalize(this);
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    LiveWatchdogs& live = live_watchdogs();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.all.erase(this);
  }
  stop();
}

void CollectiveWatchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

CollectiveWatchdog::Watch::Watch(CollectiveWatchdog* owner, const CallSignature& call, uint64_t sequence)
    : owner_(owner) {
  const int64_t fields[kCallFields] = {static_cast<int64_t>(call.kind), call.count, call.dtype, call.op, call.root,
                                       static_cast<int64_t>(sequence)};
  // The previous call's end (state_ even) before these stores, for a reader
  // that checks state_ after reading them (a weakly ordered CPU could show
  // them first).
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < kCallFields; ++i) owner_->call_fields_[i].store(fields[i], std::memory_order_relaxed);
  owner_->state_.fetch_add(1, std::memory_order_release);  // odd: running
}

CollectiveWatchdog::Watch::~Watch() {
  if (owner_ == nullptr) return;
  owner_->state_.fetch_add(1, std::memory_order_release);  // even: idle
}

void CollectiveWatchdog::run() {
  try {
    watch_calls();
  } catch (const std::exception& error) {  // nothing may escape a thread; the calls go on unwatched
    MATEX_LOG(LogLevel::kError, std::string("the collective watchdog stopped: ") + error.what());
  } catch (...) {
    MATEX_LOG(LogLevel::kError, "the collective watchdog stopped on an unknown exception");
  }
  release_requests();
}

void CollectiveWatchdog::watch_calls() {
  while (!stopping_) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto tick = Clock::now() < busy_until_ ? kBusyTick : kIdleTick;
      wake_.wait_for(lock, tick, [this] { return stopping_.load(); });
    }
    if (stopping_) break;
    poll();
    Snapshot snapshot;
    switch (what_is_due(snapshot)) {
      case Due::kNothing:
        break;
      case Due::kFirstPing:
        first_ping_at_ = Clock::now();
        first_ping_generation_ = snapshot.generation;
        for (int node : other_nodes(layout_)) ping(node, ++serial_, 0);
        break;
      case Due::kWarning:
        warn(snapshot);
        break;
      case Due::kTimeout:
        check_timeout(snapshot);
        break;
    }
  }
}

uint64_t CollectiveWatchdog::stamp_running_call() {
  // Under mutex_.
  const uint64_t state = state_.load(std::memory_order_acquire);
  if ((state & 1) != 0 && stamped_generation_ != state) {  // the first look at this call starts its clock
    stamped_generation_ = state;
    started_ = Clock::now();
    warned_ = false;
    first_ping_sent_ = false;
    next_timeout_check_ = timeout_seconds_ - window_seconds_;
  }
  return state;
}

CollectiveWatchdog::Due CollectiveWatchdog::what_is_due(Snapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t state = stamp_running_call();
  if ((state & 1) == 0) return Due::kNothing;
  snapshot.generation = state;
  snapshot.running_seconds = seconds_since(started_);
  const double running = snapshot.running_seconds;
  if (running >= next_timeout_check_) {
    snapshot.window_seconds = window_seconds_;
    return Due::kTimeout;
  }
  if (can_probe_ && !first_ping_sent_ && running >= next_timeout_check_ + window_seconds_ - timeout_seconds_ / 2) {
    first_ping_sent_ = true;
    return Due::kFirstPing;
  }
  if (!warned_ && running >= warn_seconds_ && warn_seconds_ < timeout_seconds_) {
    if (Clock::now() < next_warning_) {  // counted, reported with the next warning
      warned_ = true;
      ++unreported_;
      return Due::kNothing;
    }
    // The warning's probe must not push the timeout's later.
    snapshot.window_seconds = std::clamp(next_timeout_check_ - running, 0.2, kWarningWindowSeconds);
    return Due::kWarning;
  }
  return Due::kNothing;
}

std::string CollectiveWatchdog::still_running(const Snapshot& snapshot) {
  // Under mutex_. The call's fields hold for it only if it is still running when they have been read.
  if (state_.load(std::memory_order_acquire) != snapshot.generation) return "";
  int64_t fields[kCallFields];
  for (int i = 0; i < kCallFields; ++i) fields[i] = call_fields_[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (state_.load(std::memory_order_relaxed) != snapshot.generation) return "";
  CallSignature call;
  call.kind = static_cast<CallKind>(fields[0]);
  call.count = fields[1];
  call.dtype = fields[2];
  call.op = fields[3];
  call.root = fields[4];
  return "rank " + std::to_string(layout_.world_rank) + " (host " + watchdog_host_name(layout_, layout_.node_index) +
         "): " + describe_call(call) + " (call " + std::to_string(fields[5]) + ") has run for " +
         format_seconds(seconds_since(started_));
}

void CollectiveWatchdog::warn(const Snapshot& snapshot) {
  const std::vector<int> nodes = other_nodes(layout_);
  std::vector<ProbeAnswer> answers;
  for (int node : nodes) answers.push_back({node, -1});
  // The payload's time tells a link's speed only across real links, and one rank per node is enough.
  const bool timed = can_probe_ && !layout_.virtual_nodes && layout_.local_rank == 0 &&
                     static_cast<int>(nodes.size()) <= kSpeedProbeNodes;
  if (can_probe_) {
    const int plain = ++serial_;
    const int loaded = timed ? ++serial_ : 0;
    auto& plain_pongs = awaited_[plain];
    plain_pongs.assign(heard_.size(), Clock::time_point{});
    if (timed) awaited_[loaded].assign(heard_.size(), Clock::time_point{});
    const Clock::time_point start = Clock::now();
    for (int node : nodes) {
      ping(node, plain, 0);
      if (timed) ping(node, loaded, kSpeedProbeBytes);
    }
    const auto answered = [&](int serial, int node) { return awaited_[serial][node] != Clock::time_point{}; };
    poll_until([&] {
      return std::all_of(nodes.begin(), nodes.end(),
                         [&](int node) { return answered(plain, node) && (!timed || answered(loaded, node)); });
    }, snapshot.window_seconds);
    for (ProbeAnswer& answer : answers) {
      if (!answered(plain, answer.node)) continue;
      const Clock::time_point plain_at = awaited_[plain][answer.node];
      if (!timed) {
        answer.seconds = seconds_between(start, plain_at);
      } else if (answered(loaded, answer.node)) {
        answer.seconds = std::max(0.0, seconds_between(plain_at, awaited_[loaded][answer.node]));
      } else {
        answer.seconds = seconds_between(plain_at, Clock::now());  // at least that slow
      }
    }
    awaited_.erase(plain);
    awaited_.erase(loaded);
  }
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    message = still_running(snapshot);
    if (message.empty()) return;  // it finished meanwhile
    const std::string earlier =
        unreported_ > 0 ? " (and " + std::to_string(unreported_) + (unreported_ == 1 ? " call" : " calls") +
                              " overran since the last warning)"
                        : "";
    const std::string verdict =
        can_probe_ ? (timed ? "1 MiB probes: " : "probes: ") + judge_probes(answers, layout_, timed)
                   : "waiting on " + name_nodes(nodes, layout_) +
                         "; MPI lacks MPI_THREAD_MULTIPLE, so no host can be probed, and a dead one cannot be "
                         "told from a busy one";
    message += " (MATEX_STALL_WARNING_SECONDS = " + format_seconds(warn_seconds_) + ")" + earlier + ": " + verdict;
    warned_ = true;
    unreported_ = 0;
    next_warning_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(10 * warn_seconds_));
  }
  MATEX_LOG(LogLevel::kWarn, message);
}

void CollectiveWatchdog::check_timeout(const Snapshot& snapshot) {
  const std::vector<int> nodes = other_nodes(layout_);
  std::vector<ProbeAnswer> answers;
  for (int node : nodes) answers.push_back({node, -1});
  // Alive: heard from since the first ping of this period (this call's, else this one).
  const Clock::time_point start = Clock::now();
  const Clock::time_point since = first_ping_generation_ == snapshot.generation ? first_ping_at_ : start;
  if (can_probe_) {
    const int serial = ++serial_;
    for (int node : nodes) ping(node, serial, 0);
    const auto alive = [&](int node) { return heard_[node] >= since; };
    poll_until([&] { return std::all_of(nodes.begin(), nodes.end(), alive); }, snapshot.window_seconds);
    for (ProbeAnswer& answer : answers) {
      if (alive(answer.node)) answer.seconds = std::max(0.0, seconds_between(start, heard_[answer.node]));
    }
  }
  const bool some_silent =
      std::any_of(answers.begin(), answers.end(), [](const ProbeAnswer& answer) { return answer.seconds < 0; });
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    message = still_running(snapshot);
    if (message.empty()) return;
    message += ", past MATEX_TIMEOUT_SECONDS = " + format_seconds(timeout_seconds_);
    if (can_probe_ && some_silent) {
      message += "; pinged the other hosts at half that time and again, waiting " +
                 format_seconds(snapshot.window_seconds) + ": " + judge_probes(answers, layout_, false) +
                 ". Ending the job (MPI_Abort), since the ranks blocked in MPI would wait forever.";
    } else {
      message += can_probe_ ? ": " + judge_probes(answers, layout_, false) + "; still waiting, since every host is alive"
                            : ": waiting on " + name_nodes(nodes, layout_) +
                                  "; MPI lacks MPI_THREAD_MULTIPLE, so no host can be probed, and a dead one "
                                  "cannot be told from a busy one: still waiting";
      next_timeout_check_ += timeout_seconds_;
      first_ping_sent_ = false;
      warned_ = true;
    }
  }
  if (can_probe_ && some_silent) {
    MATEX_LOG(LogLevel::kError, message);
    std::fflush(stderr);
    // The other ranks reach their verdicts at about the same time: let them say theirs.
    std::this_thread::sleep_for(std::chrono::duration<double>(kAbortGraceSeconds));
    MPI_Abort(MPI_COMM_WORLD, 1);
    return;
  }
  MATEX_LOG(LogLevel::kWarn, message);
}

template <class Done>
void CollectiveWatchdog::poll_until(Done done, double seconds) {
  const Clock::time_point start = Clock::now();
  for (;;) {
    poll();
    {
      // A call that starts while a probe waits gets its clock now, not after the wait (up to 5 s).
      std::lock_guard<std::mutex> lock(mutex_);
      stamp_running_call();
    }
    if (done() || stopping_ || seconds_since(start) >= seconds) return;
    std::this_thread::sleep_for(kBusyTick);
  }
}

void CollectiveWatchdog::send(int peer, int tag, int serial, size_t payload_bytes) {
  Message& message = outgoing_.emplace_back();
  message.peer = peer;
  message.buffer.assign(sizeof serial + payload_bytes, 0);
  std::memcpy(message.buffer.data(), &serial, sizeof serial);
  MPI_Isend(message.buffer.data(), static_cast<int>(message.buffer.size()), MPI_BYTE, peer, tag, probes_.get(),
            &message.request);
}

void CollectiveWatchdog::ping(int node, int serial, size_t payload_bytes) {
  send(lowest_rank_of(layout_, node), kPingTag, serial, payload_bytes);
}

void CollectiveWatchdog::poll() {
  if (!can_probe_) return;
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? outgoing_.erase(it) : std::next(it);
  }
  // Matched probes size each receive (a ping may carry a payload).
  for (int tag : {kPingTag, kPongTag}) {
    for (;;) {
      int arrived = 0;
      MPI_Message handle = MPI_MESSAGE_NULL;
      MPI_Status status;
      if (MPI_Improbe(MPI_ANY_SOURCE, tag, probes_.get(), &arrived, &handle, &status) != MPI_SUCCESS || !arrived) {
        break;
      }
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      Message& message = incoming_.emplace_back();
      message.peer = status.MPI_SOURCE;
      message.ping = tag == kPingTag;
      message.buffer.assign(static_cast<size_t>(std::max(bytes, 1)), 0);
      MPI_Imrecv(message.buffer.data(), bytes, MPI_BYTE, &handle, &message.request);
      if (message.ping) {
        busy_until_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(kBusySeconds));
      }
    }
  }
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (!done) {
      ++it;
      continue;
    }
    int serial = 0;
    if (it->buffer.size() >= sizeof serial) std::memcpy(&serial, it->buffer.data(), sizeof serial);
    if (it->ping) {
      send(it->peer, kPongTag, serial, 0);
    } else if (it->peer >= 0 && it->peer < layout_.world_size) {
      const int node = layout_.node_of_rank[it->peer];
      const Clock::time_point now = Clock::now();
      heard_[node] = now;
      auto awaited = awaited_.find(serial);
      if (awaited != awaited_.end()) awaited->second[node] = now;
    }
    it = incoming_.erase(it);
  }
}

void CollectiveWatchdog::release_requests() {
  // A send to, or a matched receive from, a peer that is gone may never complete, and neither can be
  // cancelled for sure: free the request and keep its buffer.
  Abandoned& kept = abandoned();
  std::lock_guard<std::mutex> lock(kept.mutex);
  for (std::list<Message>* messages : {&outgoing_, &incoming_}) {
    for (Message& message : *messages) {
      int done = 0;
      MPI_Test(&message.request, &done, MPI_STATUS_IGNORE);
      if (done) continue;
      MPI_Request_free(&message.request);
      kept.buffers.push_back(std::move(message.buffer));
    }
    messages->clear();
  }
}

}  // namespace matexcomm
