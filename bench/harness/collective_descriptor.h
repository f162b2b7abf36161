// collective_descriptor.h - what the harness knows of one collective. Each
// collective fills one descriptor in its own file (collectives/*.cc): the
// bytes its buffers hold, how to write a call's inputs and check its output,
// how to call it (ours and MPI's), and its bus bandwidth factor. The harness
// (collective_runner.cc, matex_bench_main.cc, the tables) never switches on
// the collective: adding one to matex-bench is one file and one line in
// collective_descriptor.cc.
// Conventions (nccl-tests'): `count` is the call's count argument, per rank
// for allgather and reduce_scatter; a table row of `bytes` stands for
// count x ranks elements there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "case_spec.h"
#include "matexcomm/matexcomm.hpp"
#include "mpi_baseline.h"
#include "reference_patterns.h"

namespace matexbench {

// The bytes of a call's buffers, from their start: what it reads from send
// (0 in place), what it reads or writes in recv, and its output in recv.
struct CallExtent {
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
  size_t output_bytes = 0;
};

// A span of a buffer, in bytes.
struct ByteSpan {
  size_t offset = 0;
  size_t bytes = 0;
};

// One rank's view of a call: the case, who it is, and its host buffers.
struct RankCall {
  const CaseSpec& spec;
  int rank;
  int world_size;
  unsigned char* send;
  unsigned char* recv;
};

constexpr int kPoison = 0xA5;  // never a valid result: every expected value is small

struct CollectiveDescriptor {
  matex_collective_t coll;
  const char* name;
  bool reduces;           // takes an op
  bool rooted;            // takes a root
  bool count_per_rank;    // the count argument is per rank
  bool only_in_place;     // one buffer: every call is in place (broadcast)
  // busbw = algbw x bus_factor(p).
  double (*bus_factor)(int world_size);
  CallExtent (*extent)(const CaseSpec& spec, int world_size);
  // Writes call `seq`'s inputs (in place: into recv) and poisons every
  // output element that the call must overwrite when `poison` (the checked
  // call) or when it is not an input.
  void (*prepare)(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool poison);
  // recv holds inputs (or poison) before every call, not only the checked
  // or in-place ones: what must go up to device buffers each time.
  bool recv_always_uploaded;
  // Where this rank's input sits in recv for an in-place call, and whether
  // the call writes this rank's recv at all (a broadcast root's stays).
  ByteSpan (*input_in_recv)(const CaseSpec& spec, int rank, int world_size);
  bool (*writes_output)(const CaseSpec& spec, int rank);
  // Our call (send: MATEX_IN_PLACE in place) and MPI's (send: null in place).
  void (*run_ours)(matex::Communicator& comm, const CaseSpec& spec, const void* send, void* recv);
  void (*run_mpi)(const MpiBaseline& mpi, const CaseSpec& spec, const void* send, void* recv);
  // Wrong elements of the output of call `seq` in recv.
  uint64_t (*count_wrong)(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq);
};

// The descriptor of `coll`; std::invalid_argument for one matex-bench does not time (reduce).
const CollectiveDescriptor& descriptor_of(matex_collective_t coll);

// What allreduce and reduce_scatter write before a call: this rank's
// `inputs` elements (in place: into recv), and poison over recv's `count`
// output elements when `poison` and not in place.
void prepare_reduction(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool poison,
                       size_t inputs);

// The count argument for a `bytes` row (0 when the row is too small), and the
// elements that the row's size stands for.
size_t call_count_for(matex_collective_t coll, size_t bytes, size_t element_bytes, int world_size);
size_t row_elements(matex_collective_t coll, size_t call_count, int world_size);

}  // namespace matexbench
