#include "comm/collective_watchdog.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <cstdio>
#include <utility>

#include "core/error.h"
#include "core/logging.h"

namespace matexcomm {

namespace {

constexpr int kPingTag = 1;
constexpr int kPongTagBase = 2;  // + the probe's serial, so that a late answer to an earlier probe never counts
constexpr int kPongTagSpan = 30000;  // MPI promises tags up to 32767
constexpr auto kTick = std::chrono::milliseconds(100);
// A probe answered later than this, and 4 x later than the fastest, crossed a slow link. Probes at a stall
// warning carry kSpeedProbeBytes (to at most kSpeedProbeNodes other nodes: the traffic grows with their
// square): 1 MiB takes 0.084 s at 100 Mbit/s and 0.008 s at 1 Gbit/s, past tc's bursts and socket buffers.
constexpr double kSlowAnswerSeconds = 0.05;
constexpr size_t kSpeedProbeBytes = size_t{1} << 20;
constexpr int kSpeedProbeNodes = 16;

double seconds_since(CollectiveWatchdog::Clock::time_point start) {
  return std::chrono::duration<double>(CollectiveWatchdog::Clock::now() - start).count();
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds < 0.1 ? "%.3f s" : "%.1f s", seconds);
  return text;
}

// How long a probe may wait for answers: long enough for a message queued
// behind a slow link's data, short enough to fit inside the timeout.
double probe_window(double timeout_seconds) { return std::clamp(0.2 * timeout_seconds, 0.5, 3.0); }

std::string ranks_of_node(const topo::Layout& layout, int node) {
  std::string text;
  int count = 0;
  for (int r = 0; r < layout.world_size; ++r) {
    if (layout.node_of_rank[r] != node) continue;
    text += (count++ ? "," : "") + std::to_string(r);
  }
  return (count == 1 ? "rank " : "ranks ") + text;
}

std::string name_nodes(const std::vector<int>& nodes, const topo::Layout& layout) {
  std::string text;
  for (size_t i = 0; i < nodes.size(); ++i) {
    text += (i ? ", " : "") + CollectiveWatchdog::host_name(layout, nodes[i]) + " (" +
            ranks_of_node(layout, nodes[i]) + ")";
  }
  return text;
}

// Live watchdogs, stopped when MPI_Finalize begins (the deletion of an attribute of MPI_COMM_SELF), in
// case a program finalizes MPI before it finalizes matex: no thread of ours may call MPI after that.
std::mutex g_live_mutex;
std::set<CollectiveWatchdog*> g_live;

int stop_watchdogs_at_finalize(MPI_Comm, int, void*, void*) {
  std::lock_guard<std::mutex> lock(g_live_mutex);
  for (CollectiveWatchdog* watchdog : g_live) watchdog->stop();
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
  std::lock_guard<std::mutex> lock(g_live_mutex);
  g_live.insert(watchdog);
}

int lowest_rank_of(const topo::Layout& layout, int node) {
  for (int r = 0; r < layout.world_size; ++r) {
    if (layout.node_of_rank[r] == node) return r;
  }
  return -1;
}

}  // namespace

std::string CollectiveWatchdog::host_name(const topo::Layout& layout, int node) {
  std::string id = node < static_cast<int>(layout.node_hosts.size()) ? layout.node_hosts[node] : "";
  id = id.substr(0, id.find('/'));
  if (layout.virtual_nodes || id.empty()) return "node " + std::to_string(node) + (id.empty() ? "" : " on " + id);
  return id;
}

std::string CollectiveWatchdog::judge(const std::vector<ProbeResult>& results, const topo::Layout& layout,
                                      bool timed) {
  if (results.empty()) return "no other host to probe";
  const std::string self = host_name(layout, layout.node_index);
  double fastest = -1;
  std::string answers;
  for (const ProbeResult& r : results) {
    if (r.seconds < 0) continue;
    if (fastest < 0 || r.seconds < fastest) fastest = r.seconds;
    answers += (answers.empty() ? "" : ", ") + host_name(layout, r.node) + " in " + format_seconds(r.seconds);
  }
  const std::string answered = answers.empty() ? "" : " (answered: " + answers + ")";
  // Slow: late in itself, and 4 x later than the fastest answer (a busy but healthy network delays all alike).
  const double slow = std::max(kSlowAnswerSeconds, 4 * fastest);
  std::vector<int> silent, slow_nodes;
  for (const ProbeResult& r : results) {
    if (r.seconds < 0) silent.push_back(r.node);
    if (timed && (r.seconds >= slow || (r.seconds >= kSlowAnswerSeconds && fastest >= kSlowAnswerSeconds))) {
      slow_nodes.push_back(r.node);
    }
  }
  const size_t prompt = results.size() - silent.size() - slow_nodes.size();
  const bool several = results.size() > 1;
  if (silent.size() == results.size()) {
    if (several) return "this host (" + self + ") reaches none of the other hosts: its own link or network is the likely fault";
    return name_nodes(silent, layout) + " does not answer: it, or the link between it and this host (" + self +
           "), is down";
  }
  if (!silent.empty()) {  // an answer, however slow, shows that this host's own link works
    return name_nodes(silent, layout) + (silent.size() == 1 ? " does" : " do") +
           " not answer while the other hosts do" + answered + ": the likely fault";
  }
  if (several && prompt == 0) {
    return "every other host answers slowly" + answered + ": this host's (" + self +
           ") own link is the likely bottleneck, or the whole network is congested";
  }
  if (slow_nodes.empty()) {
    return "every host answers promptly" + answered + ": they are alive, busy elsewhere or in another call";
  }
  if (several) {
    return name_nodes(slow_nodes, layout) + " answer" + (slow_nodes.size() == 1 ? "s" : "") +
           " slowly while the others are prompt" + answered + ": " + (slow_nodes.size() == 1 ? "its" : "their") +
           " link is the likely bottleneck";
  }
  return name_nodes(slow_nodes, layout) + " answers slowly" + answered + ": the link between it and this host (" +
         self + ") is slow or congested";
}

CollectiveWatchdog::CollectiveWatchdog(MPI_Comm comm, const topo::Layout& layout, double warn_seconds,
                                       double timeout_seconds)
    : layout_(layout), warn_seconds_(warn_seconds), timeout_seconds_(timeout_seconds) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  can_probe_ = provided >= MPI_THREAD_MULTIPLE;
  if (can_probe_) {
    probes_ = UniqueComm::duplicate(comm);
    MPI_Comm_set_errhandler(probes_.get(), MPI_ERRORS_RETURN);  // a dead peer must not end this rank here
  }
  next_timeout_check_ = timeout_seconds_ - probe_window(timeout_seconds_);
  thread_ = std::thread([this] { run(); });
  stop_at_finalize(this);
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    g_live.erase(this);
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
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  owner_->running_ = true;
  owner_->call_ = call;
  owner_->sequence_ = sequence;
  owner_->started_ = Clock::now();
  owner_->warned_ = false;
  owner_->next_timeout_check_ = owner_->timeout_seconds_ - probe_window(owner_->timeout_seconds_);
}

CollectiveWatchdog::Watch::~Watch() {
  if (owner_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  owner_->running_ = false;
}

void CollectiveWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kTick, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    answer_probes();
    lock.lock();
    if (!running_) continue;
    const double running = seconds_since(started_);
    const bool overran = !warned_ && running >= warn_seconds_ && warn_seconds_ < timeout_seconds_;
    if (overran && Clock::now() < next_warning_) {
      warned_ = true;  // counted, reported with the next warning
      ++unreported_;
    } else if (overran || running >= next_timeout_check_) {
      lock.unlock();
      on_overdue(running);
      lock.lock();
    }
  }
  lock.unlock();
  for (Message& message : incoming_) {  // probes from peers that stopped meanwhile
    MPI_Cancel(&message.request);
    MPI_Wait(&message.request, MPI_STATUS_IGNORE);
  }
  incoming_.clear();
  // A send to a peer that is gone may never complete: MPI may still read its
  // buffer, so that buffer is kept for the life of the process.
  static auto* abandoned = new std::list<Message>;  // never freed on purpose
  static std::mutex abandoned_mutex;
  std::lock_guard<std::mutex> abandoned_lock(abandoned_mutex);
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (done) {
      it = outgoing_.erase(it);
    } else {
      MPI_Request_free(&it->request);
      auto next = std::next(it);
      abandoned->splice(abandoned->end(), outgoing_, it);
      it = next;
    }
  }
}

void CollectiveWatchdog::send(int serial, size_t payload_bytes, int peer, int tag) {
  Message& message = outgoing_.emplace_back();
  message.buffer.assign(sizeof serial + payload_bytes, 0);
  std::memcpy(message.buffer.data(), &serial, sizeof serial);
  MPI_Isend(message.buffer.data(), static_cast<int>(message.buffer.size()), MPI_BYTE, peer, tag, probes_.get(),
            &message.request);
}

void CollectiveWatchdog::answer_probes() {
  if (!can_probe_) return;
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? outgoing_.erase(it) : std::next(it);
  }
  // A probe may carry a payload (a link's speed): matched probes size each receive.
  for (;;) {
    int arrived = 0;
    MPI_Message handle = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, kPingTag, probes_.get(), &arrived, &handle, &status) != MPI_SUCCESS || !arrived) {
      break;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    Message& message = incoming_.emplace_back();
    message.peer = status.MPI_SOURCE;
    message.buffer.assign(static_cast<size_t>(std::max(bytes, 1)), 0);
    MPI_Imrecv(message.buffer.data(), bytes, MPI_BYTE, &handle, &message.request);
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
    send(serial, 0, it->peer, kPongTagBase + serial % kPongTagSpan);
    it = incoming_.erase(it);
  }
}

std::vector<CollectiveWatchdog::ProbeResult> CollectiveWatchdog::probe(double window_seconds, size_t payload_bytes) {
  std::vector<ProbeResult> results;
  for (int node = 0; node < layout_.node_count; ++node) {
    if (node != layout_.node_index) results.push_back({node, -1});
  }
  if (!can_probe_) return results;
  const int serial = ++probe_serial_;
  const int tag = kPongTagBase + serial % kPongTagSpan;
  std::vector<MPI_Request> answers(results.size(), MPI_REQUEST_NULL);
  std::vector<std::array<char, 16>> answer_in(results.size());
  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < results.size(); ++i) {
    const int peer = lowest_rank_of(layout_, results[i].node);
    MPI_Irecv(answer_in[i].data(), static_cast<int>(answer_in[i].size()), MPI_BYTE, peer, tag, probes_.get(),
              &answers[i]);
    send(serial, payload_bytes, peer, kPingTag);
  }
  size_t pending = results.size();
  while (pending > 0 && seconds_since(start) < window_seconds) {
    answer_probes();  // the others probe too, perhaps this very rank
    for (size_t i = 0; i < results.size(); ++i) {
      if (answers[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Test(&answers[i], &done, MPI_STATUS_IGNORE);
      if (done) {
        results[i].seconds = seconds_since(start);
        --pending;
      }
    }
    if (pending > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (answers[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&answers[i]);
      MPI_Wait(&answers[i], MPI_STATUS_IGNORE);
    }
  }
  return results;
}

void CollectiveWatchdog::on_overdue(double running_seconds) {
  const bool at_timeout = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    return running_seconds >= next_timeout_check_;
  }();
  // A timed probe may queue behind a slow link's data: it gets longer (only the warning waits for it).
  const double window = at_timeout ? probe_window(timeout_seconds_) : std::max(5.0, probe_window(timeout_seconds_));
  // A stall may be a slow link: time a payload. A timeout asks only whether the others are there.
  const size_t payload = !at_timeout && layout_.node_count - 1 <= kSpeedProbeNodes ? kSpeedProbeBytes : 0;
  std::vector<ProbeResult> results = probe(window, payload);
  bool some_silent = !can_probe_ || std::any_of(results.begin(), results.end(),
                                                [](const ProbeResult& r) { return r.seconds < 0; });
  std::lock_guard<std::mutex> lock(mutex_);
  if (!running_) return;  // it finished meanwhile
  const double now_running = seconds_since(started_);
  const std::string what = "rank " + std::to_string(layout_.world_rank) + " (host " +
                           host_name(layout_, layout_.node_index) + "): " + describe_call(call_) + " (call " +
                           std::to_string(sequence_) + ") has run for " + format_seconds(now_running);
  const std::string verdict = can_probe_ ? (payload ? "probes of 1 MiB: " : "") + judge(results, layout_, payload > 0)
                                         : "waiting on " + name_nodes([&] {
                                             std::vector<int> nodes;
                                             for (const ProbeResult& r : results) nodes.push_back(r.node);
                                             return nodes;
                                           }(), layout_) + " (no probe: MPI lacks MPI_THREAD_MULTIPLE)";
  if (at_timeout && can_probe_ && some_silent) {
    MATEX_LOG(LogLevel::kError, what + ", past MATEX_TIMEOUT_SECONDS = " + format_seconds(timeout_seconds_) +
                                    "; probed the other hosts for " + format_seconds(window) + ": " + verdict +
                                    ". Ending the job (MPI_Abort), since the ranks blocked in MPI would wait forever.");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return;
  }
  if (at_timeout) {
    next_timeout_check_ += timeout_seconds_;
    MATEX_LOG(LogLevel::kWarn, what + ", past MATEX_TIMEOUT_SECONDS = " + format_seconds(timeout_seconds_) + ": " +
                                   verdict + "; still waiting, since every host is alive");
  } else {
    const std::string earlier =
        unreported_ > 0 ? " (and " + std::to_string(unreported_) + " calls overran since the last warning)" : "";
    MATEX_LOG(LogLevel::kWarn, what + " (MATEX_STALL_WARNING_SECONDS = " + format_seconds(warn_seconds_) + ")" +
                                   earlier + ": " + verdict);
    unreported_ = 0;
    next_warning_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(10 * warn_seconds_));
  }
  warned_ = true;
}

}  // namespace matexcomm
