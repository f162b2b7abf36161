#include "transport/shm_node_channel.h"

#include <cstring>
#include <string>
#include <utility>

#include "core/backoff.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

constexpr size_t kNameBytes = 128;

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string describe(const CallDescriptor& d) {
  return "count=" + std::to_string(d.count) + " dtype=" + dtype_name(static_cast<matex_dtype_t>(d.dtype)) +
         " op=" + op_name(static_cast<matex_op_t>(d.op)) + " algorithm#" + std::to_string(d.algorithm) +
         " collective#" + std::to_string(d.collective);
}

// Local rank 0 creates the segment; the others map it; then it is unlinked.
// Every rank learns whether all succeeded, so a failure never leaves a peer waiting.
ShmSegment attach_segment(MPI_Comm node_comm, int local_rank, size_t bytes) {
  ShmSegment segment;
  char name[kNameBytes] = {0};
  std::string failure;
  if (local_rank == 0) {
    try {
      segment = ShmSegment::create(bytes);
      std::strncpy(name, segment.name().c_str(), kNameBytes - 1);
    } catch (const Error& error) {
      failure = error.message();
    }
  }
  check_mpi(MPI_Bcast(name, kNameBytes, MPI_CHAR, 0, node_comm), "MPI_Bcast of the shm segment name");
  if (local_rank != 0 && name[0] != '\0') {
    try {
      segment = ShmSegment::open(name, bytes);
    } catch (const Error& error) {
      failure = error.message();
    }
  }
  int ok = failure.empty() && name[0] != '\0' ? 1 : 0;
  int all_ok = 0;
  check_mpi(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node_comm), "MPI_Allreduce of shm attach status");
  segment.unlink_name();  // everyone has mapped it (or given up): the name can go
  if (!all_ok) {
    MATEX_RAISE(MATEX_ERR_SYSTEM, failure.empty() ? "a peer on this node could not set up shared memory"
                                                  : failure);
  }
  return segment;
}

}  // namespace

ShmNodeChannel::ShmNodeChannel(MPI_Comm node_comm, std::vector<int> world_ranks, size_t chunk_bytes,
                               double timeout_seconds)
    : world_ranks_(std::move(world_ranks)),
      chunk_bytes_(round_up(chunk_bytes < 64 ? 64 : chunk_bytes, 64)),
      timeout_seconds_(timeout_seconds) {
  check_mpi(MPI_Comm_rank(node_comm, &local_rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(node_comm, &local_size_), "MPI_Comm_size");
  data_offset_ = round_up(sizeof(Control) * local_size_, 4096);
  size_t bytes = data_offset_ + 2 * (local_size_ + 1) * chunk_bytes_;
  segment_ = attach_segment(node_comm, local_rank_, bytes);
}

ShmNodeChannel::Control& ShmNodeChannel::control(int local_rank) const {
  return static_cast<Control*>(segment_.data())[local_rank];
}

char* ShmNodeChannel::slot(uint64_t round, int local_rank) const {
  size_t set = round & 1;
  return static_cast<char*>(segment_.data()) + data_offset_ + (set * (local_size_ + 1) + local_rank) * chunk_bytes_;
}

char* ShmNodeChannel::result(uint64_t round) const { return slot(round, local_size_); }

template <class Ready>
void ShmNodeChannel::wait_rank(int peer, const char* stage, uint64_t round, Ready&& ready) const {
  if (wait_for(ready, timeout_seconds_)) return;
  MATEX_RAISE(MATEX_ERR_TIMEOUT, "timed out after " + std::to_string(timeout_seconds_) + " s waiting for local rank " +
                                     std::to_string(peer) + " (world rank " + std::to_string(world_ranks_[peer]) +
                                     ") to " + stage + " round " + std::to_string(round) +
                                     "; is it alive and calling the same collective? (MATEX_TIMEOUT_SECONDS)");
}

uint64_t ShmNodeChannel::stage_input(const void* input, size_t bytes, const CallDescriptor& descriptor) {
  const uint64_t round = next_round();
  wait_set_free(round);
  std::memcpy(slot(round, local_rank_), input, bytes);
  post(round, descriptor);
  wait_posted(round, descriptor);
  return round;
}

void ShmNodeChannel::drain_result(uint64_t round, void* output, size_t bytes) {
  std::memcpy(output, result(round), bytes);
  mark_consumed(round);
}

void ShmNodeChannel::wait_set_free(uint64_t round) {
  if (round <= 2) return;
  for (int peer = 0; peer < local_size_; ++peer) {
    if (peer == local_rank_) continue;
    Control& c = control(peer);
    wait_rank(peer, "finish", round - 2, [&] { return c.consumed.load(std::memory_order_acquire) >= round - 2; });
  }
}

void ShmNodeChannel::post(uint64_t round, const CallDescriptor& descriptor) {
  Control& mine = control(local_rank_);
  mine.descriptor[round & 1] = descriptor;
  mine.posted[round & 1].store(round, std::memory_order_release);
}

void ShmNodeChannel::wait_posted(uint64_t round, const CallDescriptor& descriptor) {
  for (int peer = 0; peer < local_size_; ++peer) {
    if (peer == local_rank_) continue;
    Control& c = control(peer);
    wait_rank(peer, "post its data for", round,
              [&] { return c.posted[round & 1].load(std::memory_order_acquire) >= round; });
    if (!(c.descriptor[round & 1] == descriptor)) fail_mismatch(round, peer, descriptor, c.descriptor[round & 1]);
  }
}

void ShmNodeChannel::fail_mismatch(uint64_t round, int peer, const CallDescriptor& mine,
                                   const CallDescriptor& theirs) {
  mark_ready(round);
  mark_consumed(round);
  MATEX_RAISE(MATEX_ERR_MISMATCH, "collective arguments differ between ranks: this rank has " + describe(mine) +
                                      " but local rank " + std::to_string(peer) + " (world rank " +
                                      std::to_string(world_ranks_[peer]) + ") has " + describe(theirs));
}

void ShmNodeChannel::mark_ready(uint64_t round) {
  control(local_rank_).ready.store(round, std::memory_order_release);
}

void ShmNodeChannel::wait_ready(uint64_t round, int first, int count) {
  for (int peer = first; peer < first + count; ++peer) {
    if (peer == local_rank_) continue;
    Control& c = control(peer);
    wait_rank(peer, "reduce", round, [&] { return c.ready.load(std::memory_order_acquire) >= round; });
  }
}

void ShmNodeChannel::mark_consumed(uint64_t round) {
  control(local_rank_).consumed.store(round, std::memory_order_release);
}

}  // namespace matexcomm
