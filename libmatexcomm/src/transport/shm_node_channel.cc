#include "transport/shm_node_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/backoff.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/logging.h"
#include "core/mpi_handles.h"

namespace matexcomm {

namespace {

constexpr size_t kNameBytes = 128;

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string describe(const CallDescriptor& d) {
  return "call #" + std::to_string(d.sequence) + " collective#" + std::to_string(d.collective) +
         " count=" + std::to_string(d.count) + " dtype=" + dtype_name(static_cast<matex_dtype_t>(d.dtype)) +
         " op=" + op_name(static_cast<matex_op_t>(d.op)) + " algorithm#" + std::to_string(d.algorithm);
}

// Local rank 0 creates the segment; the others map it; then it is unlinked.
// Every rank learns whether all succeeded, so a failure never leaves a peer waiting.
ShmSegment attach_segment(MPI_Comm node_comm, int local_rank, size_t bytes, size_t reserved_bytes) {
  ShmSegment segment;
  char name[kNameBytes] = {0};
  std::string failure;
  auto attempt = [&](auto&& step) {
    try {
      step();
    } catch (const Error& error) {
      failure = error.message();
    } catch (const std::exception& error) {
      failure = std::string("setting up shared memory failed: ") + error.what();
    }
  };
  if (local_rank == 0) {
    attempt([&] {
      segment = ShmSegment::create(bytes, reserved_bytes);
      std::strncpy(name, segment.name().c_str(), kNameBytes - 1);
    });
  }
  check_mpi(MPI_Bcast(name, kNameBytes, MPI_CHAR, 0, node_comm), "MPI_Bcast of the shm segment name");
  if (local_rank != 0 && name[0] != '\0') attempt([&] { segment = ShmSegment::open(name, bytes); });
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
                               ShmWaitPolicy policy)
    : world_ranks_(std::move(world_ranks)), chunk_bytes_(step_bytes(chunk_bytes)),
      policy_(policy) {
  check_mpi(MPI_Comm_rank(node_comm, &local_rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(node_comm, &local_size_), "MPI_Comm_size");
  data_offset_ = round_up(sizeof(Control) * local_size_, 4096);
  size_t bytes = data_offset_ + 2 * (local_size_ + 1) * chunk_bytes_;  // chunk_bytes is bounded by the config
  segment_ = attach_segment(node_comm, local_rank_, bytes, data_offset_);
  control(local_rank_).pid = static_cast<int64_t>(::getpid());
  check_mpi(MPI_Barrier(node_comm), "MPI_Barrier after shm set-up");  // every pid is visible
}

void ShmNodeChannel::reserve(size_t bytes) {
  const size_t needed = std::min(bytes, chunk_bytes_);
  if (needed <= reserved_ || !ShmSegment::reserves_later()) return;  // without: all reserved at creation
  constexpr size_t kFirstReservation = 4096;  // a page: small calls stay small
  const size_t target = std::min(chunk_bytes_, std::max({needed, 2 * reserved_, kFirstReservation}));
  try {
    for (int region = 0; region < 2 * (local_size_ + 1); ++region) {
      segment_.reserve(data_offset_ + static_cast<size_t>(region) * chunk_bytes_, target);
    }
  } catch (...) {
    abandon();
    throw;
  }
  reserved_ = target;
}

size_t ShmNodeChannel::step_bytes(size_t requested) { return round_up(std::max<size_t>(requested, 64), 64); }

const void* const* ShmNodeChannel::slots(uint64_t round) {
  slot_list_.resize(local_size_);
  for (int l = 0; l < local_size_; ++l) slot_list_[l] = slot(round, l);
  return slot_list_.data();
}

ShmNodeChannel::Control& ShmNodeChannel::control(int local_rank) const {
  return static_cast<Control*>(segment_.data())[local_rank];
}

char* ShmNodeChannel::slot(uint64_t round, int local_rank) const {
  size_t set = round & 1;
  return static_cast<char*>(segment_.data()) + data_offset_ + (set * (local_size_ + 1) + local_rank) * chunk_bytes_;
}

char* ShmNodeChannel::result(uint64_t round) const { return slot(round, local_size_); }

std::string ShmNodeChannel::peer_name(int peer) const {
  return "local rank " + std::to_string(peer) + " (world rank " + std::to_string(world_ranks_[peer]) + ")";
}

template <class Reached>
void ShmNodeChannel::wait_peers(const char* stage, uint64_t round, int first, int count, Reached&& reached) {
  Backoff backoff(policy_.timeout_seconds, policy_.pace);  // one deadline for the whole stage
  bool warned = false;
  for (int peer = first; peer < first + count; ++peer) {
    if (peer == local_rank_) continue;
    Control& c = control(peer);
    while (!reached(c)) {
      if (c.failed.load(std::memory_order_acquire)) {
        abandon();
        MATEX_RAISE(MATEX_ERR_COMM_FAILED, peer_name(peer) + " failed during a collective, so this one cannot "
                                                             "complete; finalize the communicator");
      }
      if (c.in_mpi.load(std::memory_order_relaxed)) backoff.extend();
      if (!warned && backoff.elapsed_seconds() > policy_.stall_warning_seconds) {
        warned = true;
        MATEX_LOG(LogLevel::kWarn, "still waiting after " + std::to_string(backoff.elapsed_seconds()) +
                                       " s for " + peer_name(peer) + " to " + stage + " round " +
                                       std::to_string(round) + "; is it calling the same collective?");
      }
      if (!backoff.pause() && !reached(c)) {
        abandon();
        MATEX_RAISE(MATEX_ERR_TIMEOUT, "timed out after " + std::to_string(policy_.timeout_seconds) +
                                           " s waiting for " + peer_name(peer) + " to " + stage + " round " +
                                           std::to_string(round) +
                                           "; is it alive and calling the same collective? (MATEX_TIMEOUT_SECONDS)");
      }
    }
  }
}

void ShmNodeChannel::post_and_gather(uint64_t round, const CallDescriptor& descriptor) {
  Control& mine = control(local_rank_);
  mine.post[round & 1].descriptor = descriptor;
  mine.post[round & 1].posted.store(round, std::memory_order_release);
  wait_peers("post its data for", round, 0, local_size_, [&](const Control& c) {
    return c.post[round & 1].posted.load(std::memory_order_acquire) >= round;
  });
  for (int peer = 0; peer < local_size_; ++peer) {
    const CallDescriptor& theirs = control(peer).post[round & 1].descriptor;
    if (!(theirs == descriptor)) fail_mismatch(round, peer, descriptor, theirs);
  }
}

uint64_t ShmNodeChannel::stage_input(const void* input, size_t bytes, const CallDescriptor& descriptor) {
  return begin_round(descriptor, [&](char* my_slot) {
    if (bytes > 0) std::memcpy(my_slot, input, bytes);
  });
}

uint64_t ShmNodeChannel::stage_inline(const void* input, size_t bytes, const CallDescriptor& descriptor) {
  if (bytes > kInlineBytes) {
    MATEX_RAISE(MATEX_ERR_INTERNAL, "stage_inline takes at most " + std::to_string(kInlineBytes) + " bytes, not " +
                                        std::to_string(bytes));
  }
  const uint64_t round = open_round();
  if (bytes > 0) std::memcpy(control(local_rank_).post[round & 1].payload, input, bytes);
  post_and_gather(round, descriptor);
  return round;
}

const void* const* ShmNodeChannel::inline_slots(uint64_t round) {
  slot_list_.resize(local_size_);
  for (int l = 0; l < local_size_; ++l) slot_list_[l] = control(l).post[round & 1].payload;
  return slot_list_.data();
}

void ShmNodeChannel::exchange_descriptor(const CallDescriptor& descriptor) {
  const uint64_t round = stage_input(nullptr, 0, descriptor);
  mark_ready(round);
}

uint64_t ShmNodeChannel::expose_buffers(const CallDescriptor& descriptor, const void* send, void* recv) {
  Control& mine = control(local_rank_);
  mine.send_address = reinterpret_cast<uint64_t>(send);
  mine.recv_address = reinterpret_cast<uint64_t>(recv);
  return stage_input(nullptr, 0, descriptor);  // the release store of `posted` publishes them
}

ShmNodeChannel::PeerBuffers ShmNodeChannel::peer_buffers(int peer) const {
  const Control& c = control(peer);
  return {static_cast<pid_t>(c.pid), reinterpret_cast<const char*>(c.send_address),
          reinterpret_cast<char*>(c.recv_address)};
}

void ShmNodeChannel::fail_mismatch(uint64_t round, int peer, const CallDescriptor& mine,
                                   const CallDescriptor& theirs) {
  // Every local rank sees the same descriptors and stops here, so closing the
  // round keeps the counters in step for the next call.
  mark_ready(round);
  for (int l = 0; l < local_size_; ++l) {
    highest_sequence_seen_ = std::max(highest_sequence_seen_, control(l).post[round & 1].descriptor.sequence);
  }
  std::string hint;
  if (mine.algorithm != theirs.algorithm && mine.count == theirs.count && mine.dtype == theirs.dtype) {
    hint = " (the ranks chose different algorithms: pass the same name to set_algorithm everywhere, and "
           "either all ranks of a node or none call in place where auto's choice depends on it: large "
           "allreduces, and the bands matex-bench --explain marks)";
  }
  MATEX_RAISE(MATEX_ERR_MISMATCH, "collective arguments differ between ranks: this rank has " + describe(mine) +
                                      " but " + peer_name(peer) + " has " + describe(theirs) + hint);
}

void ShmNodeChannel::mark_ready(uint64_t round) {
  control(local_rank_).ready.store(round, std::memory_order_release);
}

void ShmNodeChannel::wait_ready(uint64_t round, int first, int count) {
  wait_peers("reduce", round, first, count,
             [&](const Control& c) { return c.ready.load(std::memory_order_acquire) >= round; });
}

void ShmNodeChannel::drain_result(uint64_t round, void* output, size_t bytes) {
  std::memcpy(output, result(round), bytes);
}

void ShmNodeChannel::abandon() noexcept {
  if (segment_.data() != nullptr) control(local_rank_).failed.store(1, std::memory_order_release);
}

ShmNodeChannel::MpiSection::MpiSection(ShmNodeChannel& channel) : channel_(channel) {
  channel_.control(channel_.local_rank_).in_mpi.store(1, std::memory_order_relaxed);
}

ShmNodeChannel::MpiSection::~MpiSection() {
  channel_.control(channel_.local_rank_).in_mpi.store(0, std::memory_order_relaxed);
}

}  // namespace matexcomm
