// communicator_rooted.cc - argument checks and algorithm choice of the rooted
// collectives (reduce, gather(v), scatter(v)) and of alltoall(v). Checks that
// every rank shares (dtype, op, root, count) raise before any traffic, on every
// rank alike; the v-variants then agree on their counts (count_agreement.h)
// before moving data. Host buffers only in this release.
#include <string>
#include <vector>

#include "algorithms/algorithms.h"
#include "comm/argument_checks.h"
#include "comm/communicator.h"
#include "comm/communicator_run.h"
#include "comm/count_agreement.h"
#include "core/dtype.h"
#include "core/error.h"

namespace matexcomm {

namespace {

void require_root(int root, int size) {
  MATEX_REQUIRE(root >= 0 && root < size, MATEX_ERR_INVALID_ARG,
                "root = " + std::to_string(root) + " is not a rank of this communicator (size " +
                    std::to_string(size) + ")");
}

std::string indexed(const char* name, size_t index) { return std::string(name) + "[" + std::to_string(index) + "]"; }

// counts[r] and the displacements (given, or packed in rank order) of `size`
// ranks, each checked to fit an int; returns the extent in elements.
size_t read_counts(const size_t* counts, const size_t* displs, int size, const char* counts_name,
                   const char* displs_name, std::vector<size_t>& counts_out, std::vector<size_t>& displs_out) {
  MATEX_REQUIRE(counts != nullptr, MATEX_ERR_INVALID_ARG, std::string(counts_name) + " is NULL");
  counts_out.assign(counts, counts + size);
  displs_out.resize(size);
  size_t packed = 0;
  size_t extent = 0;
  for (int r = 0; r < size; ++r) {
    displs_out[r] = displs != nullptr ? displs[r] : packed;
    require_int_count(counts_out[r], indexed(counts_name, r).c_str());
    require_int_count(displs_out[r], indexed(displs_name, r).c_str());
    packed += counts_out[r];
    if (counts_out[r] > 0) extent = std::max(extent, displs_out[r] + counts_out[r]);
  }
  return extent;
}

const char* const kHostOnly = " takes host buffers only in this release";

}  // namespace

bool Communicator::check_equal_counts(const EqualCountsCall& call, size_t count, matex_dtype_t dtype,
                                      int root) const {
  require_dtype(dtype, "dtype");
  require_root(root, layout_.world_size);
  require_int_count(count, "count");
  const size_t total = count * static_cast<size_t>(layout_.world_size);
  checked_bytes(total, dtype, "count * size");
  const bool is_root = layout_.world_rank == root;
  // In place at the root: MATEX_IN_PLACE, or its own block of the root's buffer.
  const bool in_place =
      is_root && (call.own == MATEX_IN_PLACE ||
                  (call.all != nullptr &&
                   call.own == static_cast<const char*>(call.all) + root * count * dtype_size(dtype)));
  MATEX_REQUIRE(is_root || call.own != MATEX_IN_PLACE, MATEX_ERR_INVALID_ARG,
                std::string(call.own_name) + " = MATEX_IN_PLACE is only allowed at the root (rank " +
                    std::to_string(root) + ")");
  if (!in_place) require_buffer(call.own, count, call.own_name);
  if (is_root) require_buffer(call.all, total, call.all_name);
  MATEX_REQUIRE((in_place || !is_device_memory(call.own)) && !(is_root && is_device_memory(call.all)),
                MATEX_ERR_UNSUPPORTED, std::string(call.function) + kHostOnly);
  return in_place;
}

Communicator::VariableCounts Communicator::check_variable_counts(const VariableCountsCall& call, matex_dtype_t dtype,
                                                                 int root) const {
  require_dtype(dtype, "dtype");
  require_root(root, layout_.world_size);
  const int size = layout_.world_size;
  const bool is_root = layout_.world_rank == root;
  VariableCounts v;
  v.in_place = is_root && call.own == MATEX_IN_PLACE;
  // Problems only this rank can see are held back until every rank has heard of them.
  v.mine = check_locally([&] {
    MATEX_REQUIRE(is_root || call.own != MATEX_IN_PLACE, MATEX_ERR_INVALID_ARG,
                  std::string(call.own_name) + " = MATEX_IN_PLACE is only allowed at the root (rank " +
                      std::to_string(root) + ")");
    require_int_count(call.own_count, call.own_count_name);
    if (!v.in_place) require_buffer(call.own, call.own_count, call.own_name);
    MATEX_REQUIRE(v.in_place || !is_device_memory(call.own), MATEX_ERR_UNSUPPORTED,
                  std::string(call.function) + kHostOnly);
    if (!is_root) return;
    const size_t extent = read_counts(call.root_counts, call.root_displs, size, call.root_counts_name, "displs",
                                      v.counts, v.offsets);
    checked_bytes(extent, dtype, call.root_counts_name);
    require_buffer(call.root_buffer, extent, call.root_name);
    MATEX_REQUIRE(!is_device_memory(call.root_buffer), MATEX_ERR_UNSUPPORTED, std::string(call.function) + kHostOnly);
  });
  v.my_count = v.in_place && v.mine.ok() ? v.counts[root] : call.own_count;
  // At the root: names the first rank whose count differs from the root's list.
  v.judge = [call, root, counts = v.counts](const std::vector<uint64_t>& given) {
    for (size_t r = 0; r < given.size(); ++r) {
      if (given[r] == counts[r]) continue;
      return LocalProblem{MATEX_ERR_MISMATCH, std::string(call.function) + ": rank " + std::to_string(r) + " " +
                                                  call.own_verb + " " + call.own_count_name + " = " +
                                                  std::to_string(given[r]) + " elements, but the root (rank " +
                                                  std::to_string(root) + ") " + call.root_verb + " " +
                                                  call.root_counts_name + "[" + std::to_string(r) + "] = " +
                                                  std::to_string(counts[r]) + "; no rank moved any data"};
    }
    return LocalProblem{};
  };
  return v;
}

void Communicator::reduce(const void* send, void* recv, size_t count, matex_dtype_t dtype, matex_op_t op, int root) {
  require_reduction(dtype, op);
  require_root(root, layout_.world_size);
  checked_bytes(count, dtype, "count");
  const bool is_root = layout_.world_rank == root;
  const bool in_place = is_root && (send == MATEX_IN_PLACE || send == recv);
  MATEX_REQUIRE(is_root || send != MATEX_IN_PLACE, MATEX_ERR_INVALID_ARG,
                "sendbuf = MATEX_IN_PLACE is only allowed at the root (rank " + std::to_string(root) + ")");
  if (!in_place) require_buffer(send, count, "sendbuf");
  if (is_root) require_buffer(recv, count, "recvbuf");
  MATEX_REQUIRE((in_place || !is_device_memory(send)) && !(is_root && is_device_memory(recv)),
                MATEX_ERR_UNSUPPORTED, std::string("matex_reduce") + kHostOnly);
  const bool hierarchical = selector_->reduce_is_hierarchical();
  CallSignature call = reduction_call(CallKind::kReduce, count, dtype, op);
  call.root = root;
  run_collective(call, [&] {
    if (count == 0) return;
    const void* input = in_place ? nullptr : send;
    if (hierarchical) reduce_hierarchical(context_, input, recv, count, dtype, op, root);
    else reduce_flat(context_, input, recv, count, dtype, op, root);
  });
}

void Communicator::gather(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root) {
  const bool in_place = check_equal_counts({"matex_gather", send, "sendbuf", recv, "recvbuf"}, count, dtype, root);
  run_collective(rooted_call(CallKind::kGather, count, dtype, root), [&] {
    if (count == 0) return;
    gather_flat(context_, in_place ? nullptr : send, recv, count, dtype, root);
  });
}

void Communicator::gatherv(const void* send, size_t sendcount, void* recv, const size_t* recvcounts,
                           const size_t* displs, matex_dtype_t dtype, int root) {
  const VariableCounts v = check_variable_counts(
      {"matex_gatherv", send, sendcount, "sendcount", "sendbuf", "sends", recv, recvcounts, displs, "recvcounts",
       "recvbuf", "expects"},
      dtype, root);
  run_collective(rooted_call(CallKind::kGather, -1, dtype, root), [&] {
    agree_rooted_counts(world_.get(), root, v.my_count, v.mine, v.judge, "matex_gatherv");
    gatherv_flat(context_, v.in_place ? nullptr : send, sendcount, recv, v.counts, v.offsets, dtype, root);
  });
}

void Communicator::scatter(const void* send, void* recv, size_t count, matex_dtype_t dtype, int root) {
  const bool in_place = check_equal_counts({"matex_scatter", recv, "recvbuf", send, "sendbuf"}, count, dtype, root);
  run_collective(rooted_call(CallKind::kScatter, count, dtype, root), [&] {
    if (count == 0) return;
    scatter_flat(context_, send, in_place ? nullptr : recv, count, dtype, root);
  });
}

void Communicator::scatterv(const void* send, const size_t* sendcounts, const size_t* displs, void* recv,
                            size_t recvcount, matex_dtype_t dtype, int root) {
  const VariableCounts v = check_variable_counts(
      {"matex_scatterv", recv, recvcount, "recvcount", "recvbuf", "expects", send, sendcounts, displs, "sendcounts",
       "sendbuf", "sends"},
      dtype, root);
  run_collective(rooted_call(CallKind::kScatter, -1, dtype, root), [&] {
    agree_rooted_counts(world_.get(), root, v.my_count, v.mine, v.judge, "matex_scatterv");
    scatterv_flat(context_, send, v.counts, v.offsets, v.in_place ? nullptr : recv, recvcount, dtype, root);
  });
}

void Communicator::alltoall(const void* send, void* recv, size_t count, matex_dtype_t dtype) {
  require_dtype(dtype, "dtype");
  require_int_count(count, "count");
  const size_t total = count * static_cast<size_t>(layout_.world_size);
  checked_bytes(total, dtype, "count * size");
  MATEX_REQUIRE(send != MATEX_IN_PLACE, MATEX_ERR_INVALID_ARG,
                "sendbuf = MATEX_IN_PLACE: matex_alltoall has no in-place form (the buffers must not overlap)");
  require_buffer(send, total, "sendbuf");
  require_buffer(recv, total, "recvbuf");
  MATEX_REQUIRE(total == 0 || send != recv, MATEX_ERR_INVALID_ARG,
                "sendbuf == recvbuf: the buffers of matex_alltoall must not overlap");
  MATEX_REQUIRE(!is_device_memory(send) && !is_device_memory(recv), MATEX_ERR_UNSUPPORTED,
                std::string("matex_alltoall") + kHostOnly);
  run_collective(data_call(CallKind::kAlltoall, count, dtype), [&] {
    if (count == 0) return;
    alltoall_flat(context_, send, recv, count, dtype);
  });
}

void Communicator::alltoallv(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                             const size_t* recvcounts, const size_t* rdispls, matex_dtype_t dtype) {
  require_dtype(dtype, "dtype");
  const int size = layout_.world_size;
  std::vector<size_t> scounts, soffsets, rcounts, roffsets;
  const LocalProblem mine = check_locally([&] {
    MATEX_REQUIRE(send != MATEX_IN_PLACE, MATEX_ERR_INVALID_ARG,
                  "sendbuf = MATEX_IN_PLACE: matex_alltoallv has no in-place form (the buffers must not overlap)");
    const size_t send_extent = read_counts(sendcounts, sdispls, size, "sendcounts", "sdispls", scounts, soffsets);
    const size_t recv_extent = read_counts(recvcounts, rdispls, size, "recvcounts", "rdispls", rcounts, roffsets);
    checked_bytes(send_extent, dtype, "sendcounts");
    checked_bytes(recv_extent, dtype, "recvcounts");
    require_buffer(send, send_extent, "sendbuf");
    require_buffer(recv, recv_extent, "recvbuf");
    MATEX_REQUIRE(send_extent == 0 || recv_extent == 0 || send != recv, MATEX_ERR_INVALID_ARG,
                  "sendbuf == recvbuf: the buffers of matex_alltoallv must not overlap");
    MATEX_REQUIRE(!is_device_memory(send) && !is_device_memory(recv), MATEX_ERR_UNSUPPORTED,
                  std::string("matex_alltoallv") + kHostOnly);
  });
  run_collective(data_call(CallKind::kAlltoall, -1, dtype), [&] {
    agree_alltoall_counts(world_.get(), mine.ok() ? scounts.data() : nullptr, mine.ok() ? rcounts.data() : nullptr,
                          mine, "matex_alltoallv");
    alltoallv_flat(context_, send, scounts, soffsets, recv, rcounts, roffsets, dtype);
  });
}

}  // namespace matexcomm
