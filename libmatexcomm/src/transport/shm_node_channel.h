// shm_node_channel.h - the shared-memory transport between the ranks of one node.
//
// One segment per node (created by local rank 0, mapped by all, then unlinked
// at once). It holds, for each local rank, a control block of monotonically
// increasing round counters, and two buffer sets (double buffering) of
// `local_size` input slots plus one result region, each chunk_bytes long.
//
// A collective is cut into rounds; round t uses buffer set t % 2. A rank may
// refill set b for round t only when every local rank has consumed round t-2,
// so copy-in of round t overlaps copy-out of round t-1 (a two-stage pipeline).
// Every wait backs off (core/backoff.h) and times out with an error naming the
// missing rank. Each post carries a CallDescriptor; a peer whose descriptor
// differs (count, dtype, op, algorithm) is reported as MATEX_ERR_MISMATCH.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "transport/shm_segment.h"

namespace matexcomm {

struct CallDescriptor {
  uint64_t count = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t algorithm = 0;
  int32_t collective = 0;
  bool operator==(const CallDescriptor& o) const {
    return count == o.count && dtype == o.dtype && op == o.op && algorithm == o.algorithm &&
           collective == o.collective;
  }
};

class ShmNodeChannel {
 public:
  // Collective over node_comm. world_ranks[l] is the world rank of local rank l (for messages).
  ShmNodeChannel(MPI_Comm node_comm, std::vector<int> world_ranks, size_t chunk_bytes, double timeout_seconds);

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  size_t chunk_bytes() const { return chunk_bytes_; }

  // Round numbers start at 1 and are drawn in the same order on every local rank.
  uint64_t next_round() { return ++round_; }

  char* slot(uint64_t round, int local_rank) const;
  char* result(uint64_t round) const;

  // The common opening of a round: draw the next round, wait until its buffer
  // set is free, copy `bytes` from `input` into my slot, post, and wait until
  // every local rank has posted (checking descriptors). Returns the round.
  uint64_t stage_input(const void* input, size_t bytes, const CallDescriptor& descriptor);
  // The common close: copy `bytes` of the round's result to `output`, mark consumed.
  void drain_result(uint64_t round, void* output, size_t bytes);

  // Blocks until every local rank has consumed round - 2 (set reuse is safe).
  void wait_set_free(uint64_t round);
  // Publishes that my slot of `round` is filled, with the call's descriptor.
  void post(uint64_t round, const CallDescriptor& descriptor);
  // Blocks until every local rank has posted `round`; checks their descriptors.
  void wait_posted(uint64_t round, const CallDescriptor& descriptor);
  void mark_ready(uint64_t round);
  // Blocks until local ranks [first, first + count) have marked `round` ready.
  void wait_ready(uint64_t round, int first, int count);
  void mark_consumed(uint64_t round);

 private:
  struct alignas(128) Control {
    std::atomic<uint64_t> posted[2];
    CallDescriptor descriptor[2];
    std::atomic<uint64_t> ready;
    std::atomic<uint64_t> consumed;
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory flags need lock-free atomics");

  Control& control(int local_rank) const;
  template <class Ready>
  void wait_rank(int local_rank, const char* stage, uint64_t round, Ready&& ready) const;
  // Marks this round done so peers are not left waiting, then throws MATEX_ERR_MISMATCH.
  [[noreturn]] void fail_mismatch(uint64_t round, int peer, const CallDescriptor& mine,
                                  const CallDescriptor& theirs);

  std::vector<int> world_ranks_;
  int local_rank_ = 0;
  int local_size_ = 1;
  size_t chunk_bytes_ = 0;
  double timeout_seconds_ = 0;
  uint64_t round_ = 0;
  size_t data_offset_ = 0;
  ShmSegment segment_;
};

}  // namespace matexcomm
