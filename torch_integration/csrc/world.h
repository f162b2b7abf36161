// world.h - what the extension keeps per process: the libmatexcomm
// communicator over MPI_COMM_WORLD that every group's communicator is made
// from, the launcher's view of this process, and the orderly shutdown of
// every open backend before MPI is finalized.
#pragma once

#include <matexcomm/matexcomm.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace matex_torch {

struct WorldFacts {
  int rank;
  int size;
  int thread_level_multiple;  // 1 when MPI runs with MPI_THREAD_MULTIPLE
};

// Initializes MPI (through matex_init) on first use.
WorldFacts world_facts();

// Rank 0's address and a free TCP port on it, agreed by every rank over MPI:
// "127.0.0.1" when every rank runs on rank 0's host.
struct Rendezvous {
  std::string address;
  int port;
};
Rendezvous agree_rendezvous();

// The backend of one process group: `global_ranks` lists its members' world
// ranks in group rank order (empty: the whole world). Collective over the
// members only.
c10::intrusive_ptr<c10d::Backend> create_backend(int group_rank, int group_size,
                                                 const std::vector<int64_t>& global_ranks, double timeout_seconds,
                                                 const std::string& group_name);

// Closes every open backend in creation order, then the world communicator
// (which finalizes MPI if matex initialized it). Idempotent. If a group had
// to be abandoned (its worker stuck in a collective after a wait expired),
// MPI cannot finalize: the job is ended with MPI_Abort instead of hanging.
void shutdown();

// For a backend destroyed before shutdown(): `closer` frees its
// communicator there, in creation order (false: it had to abandon it).
void defer_close(uint64_t index, std::function<bool()> closer);
// A backend's close() had to abandon its communicator.
void note_abandoned();

}  // namespace matex_torch
