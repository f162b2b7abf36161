// collective_watchdog.h - a watch over a communicator's collectives across
// nodes: a rank blocked inside MPI waiting for a host whose link or process
// is gone would otherwise wait forever (MPI's TCP transport gives up after
// the kernel's retransmission limit, about 15 minutes, or never).
//
// How: one thread per communicator that spans several nodes. A collective
// marks its start and end (Watch, RAII). The thread probes the other nodes:
// a small message (a ping) to one rank of each (the lowest), whose own
// watchdog thread answers it (a pong), busy or not. Any pong from a node,
// to any ping, shows that node alive. While a call runs:
//   - at MATEX_STALL_WARNING_SECONDS it warns, naming the hosts and how fast
//     each answered. Local rank 0 of a node (of real hosts) times a 1 MiB
//     payload too: it sends a ping, then a ping with the payload, and the
//     time between their pongs is the payload's crossing of the link (the
//     answering thread's poll tick cancels out). A slow link shows there: the
//     payload queues behind the collective's data. After a warning, calls
//     that overrun again are counted, and the next warning (with that count)
//     waits 10 x MATEX_STALL_WARNING_SECONDS;
//   - at half of MATEX_TIMEOUT_SECONDS it pings every other node, and again
//     a probe window before the timeout (0.2 x the timeout, 0.5 s to 3 s),
//     waiting that window for answers. A node heard from since the first of
//     the two is alive (a slow link may delay a pong for seconds). If some
//     are not, it logs an error naming them (or this host, when it hears
//     none of the others), waits 0.5 s (the other ranks reach their own
//     verdicts at about the same time) and ends the job (MPI_Abort). If all
//     are alive, a rank may legitimately be busy elsewhere (a checkpoint
//     before a barrier): the call keeps waiting, and the two pings repeat
//     each further MATEX_TIMEOUT_SECONDS.
// Probes need MPI_THREAD_MULTIPLE on every rank (agreed at construction).
// Below it the watchdog only warns, saying that it cannot tell a dead host
// from a busy one, and never ends the job.
//
// Cost: on the collective's path six relaxed stores, a fence and two atomic
// increments, no lock and no clock read (the thread starts a call's clock at
// the first tick that sees it, or within 1 ms while a probe waits, so warnings
// and verdicts come up to one tick, 0.1 s, late; the clock read and the two
// lock/unlock pairs took 8 % of a 64 B allreduce on 2 ranks here); the thread
// wakes every 100 ms (1 ms for 0.2 s after a ping arrived, so that a payload's
// pongs are timed closely) and makes a few MPI_Improbe and MPI_Test calls on
// its own duplicate of the communicator. Probes: at most two pings each way
// per other node per warning or timeout period; the 1 MiB payloads go from one
// rank per node to at most 16 other nodes (their traffic grows with the square
// of the nodes).
// Preconditions: construction is collective over `comm` (MPI_Comm_dup and an
// MPI_Allreduce); destruction is collective too (no ping may cross a
// destroyed watchdog, though one that does is answered by nobody and only
// delays that rank's verdict); a communicator's collectives do not overlap
// (one Watch at a time).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/call_agreement.h"
#include "comm/watchdog_verdict.h"
#include "core/mpi_handles.h"
#include "topology/layout.h"

namespace matexcomm {

class CollectiveWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // Collective over `comm`, whose layout is `layout` (kept by reference: the
  // communicator owns both and outlives the watchdog).
  CollectiveWatchdog(MPI_Comm comm, const topo::Layout& layout, double warn_seconds, double timeout_seconds);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;
  // Ends the thread (also done when MPI_Finalize begins, should the program finalize MPI first).
  void stop();

  // Marks one collective running for its lifetime.
  class Watch {
   public:
    Watch() = default;
    Watch(CollectiveWatchdog* owner, const CallSignature& call, uint64_t sequence);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    CollectiveWatchdog* owner_ = nullptr;
  };

 private:
  enum class Due { kNothing, kFirstPing, kWarning, kTimeout };
  struct Snapshot {  // the running call, as the thread saw it when a probe began
    uint64_t generation = 0;
    double running_seconds = 0;
    double window_seconds = 0;
  };
  void run();
  void watch_calls();
  Due what_is_due(Snapshot& snapshot);
  // state_, and when it names a running call not seen before, starts that
  // call's clock and its warning and timeout periods (under mutex_).
  uint64_t stamp_running_call();
  void warn(const Snapshot& snapshot);
  void check_timeout(const Snapshot& snapshot);
  // The call's description and how long it has run, or "" when the probed call ended meanwhile.
  std::string still_running(const Snapshot& snapshot);
  void release_requests();

  // Probes (the watchdog thread only).
  void poll();
  void ping(int node, int serial, size_t payload_bytes);
  void send(int peer, int tag, int serial, size_t payload_bytes);
  // Polls until `done` holds, `seconds` pass or stop() is called.
  template <class Done>
  void poll_until(Done done, double seconds);

  const topo::Layout& layout_;
  UniqueComm probes_;  // this watchdog's own traffic only
  bool can_probe_ = false;
  double warn_seconds_;
  double timeout_seconds_;
  double window_seconds_;  // how long a probe waits for answers

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  // The running call, written by Watch without a lock and read by the thread
  // as a sequence lock: state_ is odd while a call runs (its value names the
  // call, so that a probe's outcome is never applied to a later one), and the
  // call's fields change only while it is even.
  static constexpr int kCallFields = kSignatureFields + 1;  // the signature, then the sequence number
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> call_fields_[kCallFields] = {};
  // The thread's view of the running call (under mutex_).
  Clock::time_point started_{};    // when the thread first saw the running call
  uint64_t stamped_generation_ = 0;  // the state_ of the call started_ belongs to
  bool warned_ = false;
  bool first_ping_sent_ = false;  // in this timeout period
  double next_timeout_check_ = 0;  // seconds into the running call
  Clock::time_point next_warning_{};  // the earliest time of the next warning
  int unreported_ = 0;  // overrunning calls since the last warning

  // Thread-side state.
  struct Message {
    MPI_Request request = MPI_REQUEST_NULL;
    int peer = -1;
    bool ping = false;
    std::vector<char> buffer;  // the serial, then a ping's payload
  };
  std::list<Message> outgoing_;  // a list keeps each buffer in place
  std::list<Message> incoming_;
  std::vector<Clock::time_point> heard_;  // per node: its latest pong
  std::map<int, std::vector<Clock::time_point>> awaited_;  // per awaited serial: its pongs' arrival, per node
  Clock::time_point busy_until_{};  // poll every 1 ms until then
  Clock::time_point first_ping_at_{};  // of this timeout period
  uint64_t first_ping_generation_ = 0;
  int serial_ = 0;
  std::thread thread_;
};

}  // namespace matexcomm
