// shm_node_channel.h - the shared-memory transport between the ranks of one node.
//
// One segment per node (created by local rank 0, mapped by all, then unlinked
// at once; its buffers are reserved as calls first need them, see reserve).
// It holds, for each local rank, a control block of monotonically increasing
// round counters, and two buffer sets (double buffering) of `local_size`
// input slots plus one result region, each chunk_bytes long.
//
// A collective is cut into rounds; round t uses buffer set t % 2. Every round
// opens with every local rank posting, and a rank posts round t-1 only after
// it is done with round t-2; so a rank that has seen every post of round t-1
// may refill set t % 2 without another wait, and copy-in of round t overlaps
// copy-out of round t-1 (a two-stage pipeline).
//
// Waiting: every wait backs off (core/backoff.h), warns once after
// MATEX_STALL_WARNING_SECONDS and fails after MATEX_TIMEOUT_SECONDS naming
// the missing rank; a peer that is inside an MPI call across nodes (see
// MpiSection) is alive and restarts the clock. Each post carries a
// CallDescriptor; a peer whose descriptor differs is reported as
// MATEX_ERR_MISMATCH and the channel stays usable. Any other failure abandons
// the channel: the failing rank raises a flag that makes every peer's wait
// fail at once (MATEX_ERR_COMM_FAILED) instead of timing out.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backoff.h"
#include "transport/shm_segment.h"

namespace matexcomm {

struct CallDescriptor {
  uint64_t sequence = 0;  // collective calls made on the communicator so far
  uint64_t count = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t algorithm = 0;
  int32_t collective = 0;
  bool operator==(const CallDescriptor& o) const {
    return sequence == o.sequence && count == o.count && dtype == o.dtype && op == o.op &&
           algorithm == o.algorithm && collective == o.collective;
  }
};

struct ShmWaitPolicy {
  double timeout_seconds = 600;
  double stall_warning_seconds = 60;
  BackoffPace pace = BackoffPace::for_shared_cores();
};

class ShmNodeChannel {
 public:
  // Collective over node_comm. world_ranks[l] is the world rank of local rank l (for messages).
  ShmNodeChannel(MPI_Comm node_comm, std::vector<int> world_ranks, size_t chunk_bytes, ShmWaitPolicy policy);

  // The pipeline step the channel uses for a requested one: at least 64
  // bytes, rounded up to whole cache lines. Ranks alone on their node (no
  // channel) must step alike, so this is also what the communicator uses.
  static size_t step_bytes(size_t requested);

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  size_t chunk_bytes() const { return chunk_bytes_; }

  // Backs the first min(bytes, chunk_bytes) of every slot and result region
  // with memory in this process (ShmSegment::reserve), growing by doubling.
  // Call it before touching more of them than any earlier call: a new
  // channel reserves only its control blocks, since a communicator that only
  // ever carries small calls would otherwise pay for zeroing
  // 2 x (local_size + 1) chunks. On failure the channel is abandoned (the
  // peers fail at once) and MATEX_ERR_SYSTEM is raised.
  void reserve(size_t bytes);

  char* slot(uint64_t round, int local_rank) const;
  char* result(uint64_t round) const;
  // The slots of every local rank in `round`, in local-rank order (valid until the next call).
  const void* const* slots(uint64_t round);

  // The opening of a round: draw the next round number, wait until its buffer
  // set is free, copy `bytes` of `input` into my slot, post with the call's
  // descriptor, and wait until every local rank has posted (checking their
  // descriptors). Returns the round.
  uint64_t stage_input(const void* input, size_t bytes, const CallDescriptor& descriptor);
  // Payloads of up to kInlineBytes ride in the post's own cache line, so a
  // peer gets the flag, the call and the data in one transfer instead of two.
  static constexpr size_t kInlineBytes = 24;
  // stage_input for at most kInlineBytes; read the data with inline_slots.
  uint64_t stage_inline(const void* input, size_t bytes, const CallDescriptor& descriptor);
  // Every local rank's inline data of `round`, in local-rank order (valid until the next call).
  const void* const* inline_slots(uint64_t round);
  // The same with a caller-supplied fill: fill(my_slot) writes what to stage.
  template <class Fill>
  uint64_t begin_round(const CallDescriptor& descriptor, Fill&& fill) {
    const uint64_t round = open_round();
    fill(slot(round, local_rank_));
    post_and_gather(round, descriptor);
    return round;
  }
  void mark_ready(uint64_t round);
  // Blocks until local ranks [first, first + count) have marked `round` ready.
  void wait_ready(uint64_t round, int first, int count);
  // The close of a round: copy `bytes` of the result to `output`.
  void drain_result(uint64_t round, void* output, size_t bytes);

  // A round without data, so that a call with count 0 still meets its peers'
  // descriptors (a peer with a different count gets MATEX_ERR_MISMATCH).
  void exchange_descriptor(const CallDescriptor& descriptor);

  // A round without data that also publishes this rank's user buffers, for
  // algorithms that move data with cross-memory attach (transport/cma_copy.h).
  // Returns the round; close it with mark_ready / wait_ready.
  uint64_t expose_buffers(const CallDescriptor& descriptor, const void* send, void* recv);
  struct PeerBuffers {
    pid_t pid;
    const char* send;
    char* recv;
  };
  // The buffers local rank `peer` exposed in the current round.
  PeerBuffers peer_buffers(int peer) const;

  // After MATEX_ERR_MISMATCH: the highest call sequence any local rank posted,
  // so the communicator can resume in step with its peers.
  uint64_t highest_sequence_seen() const { return highest_sequence_seen_; }

  // Tells waiting peers that this rank is inside an MPI call across nodes.
  class MpiSection {
   public:
    explicit MpiSection(ShmNodeChannel& channel);
    ~MpiSection();
    MpiSection(const MpiSection&) = delete;
    MpiSection& operator=(const MpiSection&) = delete;

   private:
    ShmNodeChannel& channel_;
  };

  // Tells every peer that this rank gave up on the channel (idempotent, never throws).
  void abandon() noexcept;

 private:
  // One cache line per round parity: the post flag, the call it belongs to
  // and a small payload, so that a peer gets all three with one transfer.
  struct alignas(64) Post {
    std::atomic<uint64_t> posted;
    CallDescriptor descriptor;
    unsigned char payload[kInlineBytes];
  };
  static_assert(sizeof(Post) == 64, "a post fills exactly one cache line");
  struct alignas(64) Control {
    Post post[2];
    std::atomic<uint64_t> ready;
    std::atomic<uint32_t> failed;  // this rank abandoned the channel
    std::atomic<uint32_t> in_mpi;  // this rank is inside an MPI call across nodes
    int64_t pid;                   // written once at set-up
    uint64_t send_address;         // exposed buffers (expose_buffers), published with `posted`
    uint64_t recv_address;
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory flags need lock-free atomics");
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared-memory flags need lock-free atomics");

  Control& control(int local_rank) const;
  // Draws the next round. Its buffer set is free: see the top of this file.
  uint64_t open_round() { return ++round_; }
  // Posts my slot with the descriptor, waits for every peer's, compares them.
  void post_and_gather(uint64_t round, const CallDescriptor& descriptor);
  // Waits until reached(peer) holds for every peer in [first, first + count) but me.
  template <class Reached>
  void wait_peers(const char* stage, uint64_t round, int first, int count, Reached&& reached);
  std::string peer_name(int peer) const;
  [[noreturn]] void fail_mismatch(uint64_t round, int peer, const CallDescriptor& mine,
                                  const CallDescriptor& theirs);

  std::vector<int> world_ranks_;
  int local_rank_ = 0;
  int local_size_ = 1;
  size_t chunk_bytes_ = 0;
  ShmWaitPolicy policy_;
  uint64_t round_ = 0;
  size_t data_offset_ = 0;
  size_t reserved_ = 0;  // bytes of every slot and result region this process has reserved
  uint64_t highest_sequence_seen_ = 0;
  std::vector<const void*> slot_list_;
  ShmSegment segment_;
};

}  // namespace matexcomm
