// collective_watchdog.h - a watch over a communicator's collectives across
// nodes: a rank blocked inside MPI waiting for a host whose link or process
// is gone would otherwise wait forever (MPI's TCP transport gives up after
// the kernel's retransmission limit, about 15 minutes, or never).
//
// How: one thread per communicator that spans several nodes. A collective
// marks its start and end (Watch, RAII). When one has run for
// MATEX_STALL_WARNING_SECONDS, or again for MATEX_TIMEOUT_SECONDS, the thread
// probes the other nodes: a small message to one rank of each (the lowest),
// whose own watchdog answers from its thread, busy or not. Then:
//   - at the stall warning it warns, naming the hosts and how fast each
//     answered (a slow link answers late: the probe queues behind the data);
//     after a warning, calls that overrun again are counted, and the next
//     warning (with that count) waits 10 x MATEX_STALL_WARNING_SECONDS;
//   - at the timeout, if some node did not answer within the probe window,
//     it logs an error naming them (or this host, when it reaches none of
//     the others) and ends the job (MPI_Abort). Nodes that all answer are
//     alive: a rank may legitimately be busy elsewhere (a checkpoint before a
//     barrier), so the call keeps waiting, and the probe repeats after each
//     further MATEX_TIMEOUT_SECONDS.
// Probes need MPI_THREAD_MULTIPLE. Below it the watchdog only warns, naming
// every other node, and never ends the job.
//
// Cost: nothing on the collective's path but two uncontended lock/unlock
// pairs; the thread wakes every 100 ms and makes one MPI_Test on its own
// duplicate of the communicator. A probe: one small message each way per
// other node, at most once per warning or timeout period.
// Preconditions: construction and destruction are collective over `comm`
// (MPI_Comm_dup, and no probe may cross a destroyed watchdog); a
// communicator's collectives do not overlap (one Watch at a time).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/call_agreement.h"
#include "core/mpi_handles.h"
#include "matex/topology/layout.h"

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

  // The outcome of probing the other nodes, and the sentence naming the fault (tested on its own).
  struct ProbeResult {
    int node = 0;            // a node other than this rank's
    double seconds = -1;     // its answer's round trip; < 0: no answer within the window
  };
  // `timed`: the probes carried a payload, so their speed tells a slow link; else only silence counts.
  static std::string judge(const std::vector<ProbeResult>& results, const topo::Layout& layout, bool timed = true);
  static std::string host_name(const topo::Layout& layout, int node);  // the host id without its boot id

 private:
  void run();
  void answer_probes();
  std::vector<ProbeResult> probe(double window_seconds, size_t payload_bytes);
  void on_overdue(double running_seconds);

  const topo::Layout& layout_;
  UniqueComm probes_;  // this watchdog's own traffic only
  bool can_probe_ = false;
  double warn_seconds_;
  double timeout_seconds_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool running_ = false;
  CallSignature call_{};
  uint64_t sequence_ = 0;
  Clock::time_point started_{};
  bool warned_ = false;  // this call
  Clock::time_point next_warning_{};  // the earliest time of the next warning
  int unreported_ = 0;  // overrunning calls since the last warning
  double next_timeout_check_ = 0;  // seconds into the running call

  // Thread-side state (the watchdog thread only).
  // Probes and answers on their way; a list keeps each buffer in place.
  struct Message {
    MPI_Request request = MPI_REQUEST_NULL;
    int peer = -1;
    std::vector<char> buffer;  // the probe's serial, then its payload
  };
  std::list<Message> outgoing_;
  std::list<Message> incoming_;
  void send(int serial, size_t payload_bytes, int peer, int tag);
  int probe_serial_ = 0;
  std::thread thread_;
};

}  // namespace matexcomm
