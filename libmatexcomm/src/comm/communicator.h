// communicator.h - the object behind a matex_comm_t: topology, sub-communicators,
// shared memory, configuration, and argument checking in front of the algorithms.
#pragma once

#include <mpi.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/algorithms.h"
#include "comm/call_agreement.h"
#include "comm/collective_watchdog.h"
#include "comm/count_agreement.h"
#include "comm/device_path.h"
#include "comm/p2p_request.h"
#include "core/backoff.h"
#include "core/config.h"
#include "core/host_scratch.h"
#include "core/mpi_handles.h"
#include "topology/host_cpus.h"
#include "topology/layout.h"
#include "matexcomm/matexcomm.h"
#include "select/selector.h"
#include "transport/mpi_reductions.h"
#include "transport/shm_node_channel.h"

namespace matexcomm {

class Communicator {
 public:
  // Collective over `parent`. Reads the MATEX_* environment once.
  explicit Communicator(MPI_Comm parent);
  // Collective over `members`: a communicator whose node layout is given (a
  // parent's, restricted to the members) instead of discovered, and whose
  // host figures are the parent's (the members share cores with its other ranks).
  Communicator(MPI_Comm members, const topo::Layout& layout, const topo::HostLoad& host);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const topo::Layout& layout() const { return layout_; }
  // The MATEX_* values read when it was created.
  const Config& config() const { return config_; }
  // Where collectives add up their phases' times (null: nowhere, no clock reads).
  void set_phase_times(PhaseTimes* times) { context_.phases = times; }
  // The communicator's private duplicate of its MPI communicator.
  MPI_Comm mpi_comm() const { return world_.get(); }

  void set_algorithm(matex_collective_t coll, const char* name);
  const char* last_algorithm(matex_collective_t coll) const;
  // What auto (or a forced choice) runs for `bytes` on host buffers (matex_auto_algorithm).
  const char* auto_algorithm(matex_collective_t coll, size_t bytes) const;
  // How auto chooses, in lines of text: the calibrated table and its
  // measurements, or the fixed rule (matex_describe_selection).
  std::string describe_selection() const;
  // What a tuning file must have been measured for to serve this
  // communicator (matex_tuning_identity); loads the hwloc topology.
  TuningIdentity tuning_identity() const;

  void allreduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op,
                 const AllreduceHints& hints = {});
  // True (the same on every rank) when allreduce_pieces runs as one
  // rs_ar_ag call straight on the pieces, without packing them. Under a
  // measured table that picks flat or the small family for the fused size,
  // allreduce_pieces packs them into one buffer for that call instead.
  bool fuses_without_copies() const;
  // One allreduce over many tensors of one dtype, as if laid end to end; each
  // rank must pass the same piece counts. Without fuses_without_copies(), one
  // allreduce per piece.
  void allreduce_pieces(const std::vector<BufferPiece>& pieces, matex_dtype_t dtype, matex_op_t op,
                        const AllreduceHints& hints = {});
  void broadcast(void* buffer, size_t count, matex_dtype_t dtype, int root);
  void allgatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
                  matex_dtype_t dtype);
  void allgather(const void* send, void* recv, size_t count, matex_dtype_t dtype);
  void reduce_scatter(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype, matex_op_t op);
  void barrier();

  // ---- premultiplied sums (communicator_premul.cc); floating dtypes, host buffers ----
  void allreduce_premul_sum(const void* send, void* recv, size_t count, matex_dtype_t dtype, double factor);
  void reduce_scatter_premul_sum(const void* send, void* recv, size_t recvcount, matex_dtype_t dtype,
                                 double factor);

  // ---- rooted collectives and all-to-all (communicator_rooted.cc); host buffers ----
  void reduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op, int root);
  void gather(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root);
  void gatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts, const size_t* displs,
               matex_dtype_t dtype, int root);
  void scatter(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root);
  void scatterv(const void* send, const size_t* sendcounts, const size_t* displs, void* recv, size_t recvcount,
                matex_dtype_t dtype, int root);
  void alltoall(const void* send, void* recv, size_t count, matex_dtype_t dtype);
  void alltoallv(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                 const size_t* recvcounts, const size_t* rdispls, matex_dtype_t dtype);

  // ---- point to point (communicator_p2p.cc) ----
  // Safe on any thread, also while another thread runs a collective: they
  // touch only the private p2p communicator and the (immutable) layout.
  std::unique_ptr<P2pRequest> isend(const void* buf, size_t count, matex_dtype_t dtype, int dest, int tag) const;
  std::unique_ptr<P2pRequest> irecv(void* buf, size_t count, matex_dtype_t dtype, int source, int tag) const;

  // ---- sub-communicators (communicator_split.cc) ----
  // Collective over the listed ranks only; may run while another thread runs
  // collectives on this communicator. Creations over one communicator are
  // serialized inside the process.
  std::unique_ptr<Communicator> create_from_ranks(const std::vector<int>& ranks) const;

  // ---- GPU buffers (builds with CUDA; see device_path.h) ----
  // True for a pointer into GPU memory (always false without CUDA).
  bool is_device_memory(const void* pointer) const { return device_ && device_->is_device(pointer); }
  // The cudaStream_t device collectives run on; non-null needs a CUDA build.
  void set_cuda_stream(void* stream);
  void* cuda_stream() const { return device_ ? device_->stream() : nullptr; }
  // The engine's communicator: device collectives complete before returning.
  void set_device_blocking(bool blocking) {
    if (device_) device_->set_blocking(blocking);
  }
  // The engine's communicator: its coordinator has every rank make the same
  // calls in the same order, so MATEX_CHECK_CALLS=auto skips the call check
  // (=on still checks).
  void set_calls_agreed(bool agreed) { calls_agreed_ = agreed; }
  // The engine's allreduce of device tensors (fused, each with its scaling).
  void allreduce_device_tensors(const std::vector<ScaledPiece>& pieces, matex_dtype_t dtype, matex_op_t op);

 private:
  // The constructors' shared body; `inherited` null: discover the layout and
  // measure the host (`host` is then null too).
  Communicator(MPI_Comm parent, const topo::Layout* inherited, const topo::HostLoad* host);
  void setup_shared_memory();
  // shm_->reserve(bytes) where there is a channel, before a collective uses
  // it. A failure fails the communicator, and on several nodes ends the job
  // (ranks of other nodes would wait inside MPI forever), as a timeout does.
  void reserve_node_buffers(size_t bytes);
  // The shm pipeline step: MATEX_SHM_CHUNK_BYTES, or the _OVERSUBSCRIBED one
  // when any node has more ranks than cores (collective, same on every rank);
  // sets cores_shared_anywhere_ too.
  size_t choose_chunk_bytes();
  // True when this rank can read every local neighbour's memory (collective over the node).
  bool probe_single_copy();
  static int collective_index(matex_collective_t coll);
  // selector_->record_allreduce; a failure there fails the communicator,
  // whose ranks could no longer choose alike.
  void record_allreduce(const Selector::AllreducePick& pick, size_t bytes, double seconds, bool in_place);
  // gather and scatter alike (communicator_rooted.cc): each rank's buffer of
  // `count` ("own": gather's send, scatter's recv) and the root's of count x
  // size ("all"). Raises on a bad argument (the same on every rank for
  // dtype, root and count); returns whether this rank runs in place.
  struct EqualCountsCall {
    const char* function;  // "matex_gather"
    const void* own;
    const char* own_name;  // "sendbuf"
    const void* all;
    const char* all_name;  // "recvbuf"
  };
  bool check_equal_counts(const EqualCountsCall& call, size_t count, matex_dtype_t dtype, int root) const;
  // gatherv and scatterv alike (communicator_rooted.cc): every rank gives one
  // count and buffer of its own ("own": gatherv's send, scatterv's recv), and
  // the root a count per rank, displacements and its buffer.
  struct VariableCountsCall {
    const char* function;  // "matex_gatherv"
    const void* own;
    size_t own_count;
    const char* own_count_name;  // "sendcount"
    const char* own_name;        // "sendbuf"
    const char* own_verb;        // what a rank does with its count: "sends"
    const void* root_buffer;
    const size_t* root_counts;
    const size_t* root_displs;
    const char* root_counts_name;  // "recvcounts"
    const char* root_name;         // "recvbuf"
    const char* root_verb;         // "expects"
  };
  struct VariableCounts {
    bool in_place = false;  // at the root, own == MATEX_IN_PLACE
    std::vector<size_t> counts, offsets;  // the root's, in elements
    LocalProblem mine;  // what only this rank could see, held back for the count agreement
    uint64_t my_count = 0;
    RootedJudge judge;  // at the root: the verdict on every rank's count
  };
  // The checks before any traffic: dtype and root raise at once (every rank
  // sees them alike), the rest is held in `mine` for agree_rooted_counts.
  VariableCounts check_variable_counts(const VariableCountsCall& call, matex_dtype_t dtype, int root) const;
  // Runs one collective after its arguments were checked: counts the call,
  // refuses to run on a failed communicator, confirms that every rank makes
  // the same `call` (MATEX_CHECK_CALLS; `compared_inside_node`: the body's
  // shared-memory channel compares the calls itself, which is enough on one
  // node), and marks the communicator failed when the collective fails midway
  // (anything but a mismatch).
  // `body_checks`: the body makes the check itself (an allreduce carried
  // along with it, call_agreement.h), and must when call_check_due().
  template <class Body>
  void run_collective(const CallSignature& call, Body&& body, bool compared_inside_node = false,
                      bool body_checks = false);
  // Whether a collective started now gets the call check (MATEX_CHECK_CALLS,
  // the layout, a call nested in another, the engine's agreed calls).
  bool call_check_due(bool compared_inside_node) const;
  CallCheckComms call_check_comms() const;

  Config config_;
  UniqueComm world_;
  topo::Layout layout_;
  topo::Groups groups_;
  std::unique_ptr<MpiReductions> reductions_;
  std::unique_ptr<ShmNodeChannel> shm_;
  CollectiveContext context_;
  HostScratch scratch_;
  // Which algorithm runs (select/selector.h); made last in the constructor.
  std::unique_ptr<Selector> selector_;
  // My host's PUs (their affinities, not the PUs online) and ranks. Its node
  // test sets the chunk size (virtual nodes count as machines); its host test
  // sets the pacing of waits, and auto's measured tables record it (tuning
  // files, --explain).
  topo::HostLoad host_;
  bool cores_shared_anywhere_ = false;  // some host has more ranks than cores (the same on every rank)
  size_t streaming_min_bytes_ = 0;
  const char* last_[4] = {"", "", "", ""};  // static strings: no copy per call
  uint64_t sequence_ = 0;
  enum class CallCheck { kAuto, kOn, kOff };
  CallCheck check_calls_ = CallCheck::kAuto;  // MATEX_CHECK_CALLS, parsed once
  bool calls_agreed_ = false;  // set_calls_agreed: the caller agreed on every call (the engine)
  double stall_warning_seconds_ = 60;  // MATEX_STALL_WARNING_SECONDS, for the call check
  bool in_collective_ = false;         // a collective's body runs (the staged GPU path nests host calls)
  BackoffPace check_pace_ = BackoffPace::for_shared_cores();
  std::string failure_;  // non-empty once the communicator has failed
  std::unique_ptr<DevicePath> device_;  // null without CUDA
  // Point to point and sub-communicator creation each have a private
  // duplicate, so that other threads' use never meets the collectives' traffic.
  UniqueComm p2p_;
  UniqueComm creation_;
  mutable std::mutex creation_mutex_;  // one MPI_Comm_create_group at a time on creation_
  // p2p waits yield early: a peer of a point-to-point message may be any rank
  // of the host, and the tests run more ranks than cores.
  BackoffPace pace_ = BackoffPace::for_shared_cores();
  HostScratch fused_scratch_;  // allreduce_pieces' packed pieces, when the table wants one buffer
  HostScratch premul_scratch_;  // reduce_scatter_premul_sum's scaled copy of the input
  // Across nodes: ends a collective blocked on a host that is gone (null on one node). Last, so that
  // it stops before anything it reads is destroyed.
  std::unique_ptr<CollectiveWatchdog> watchdog_;
};

}  // namespace matexcomm
