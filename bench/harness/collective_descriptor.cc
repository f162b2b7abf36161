// collective_descriptor.cc - the collectives matex-bench times, one
// descriptor each (collectives/*.cc), and what they share: the reductions'
// inputs and the row arithmetic.
#include "collective_descriptor.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace matexbench {

extern const CollectiveDescriptor kAllreduceDescriptor;
extern const CollectiveDescriptor kBroadcastDescriptor;
extern const CollectiveDescriptor kAllgatherDescriptor;
extern const CollectiveDescriptor kReduceScatterDescriptor;

const CollectiveDescriptor& descriptor_of(matex_collective_t coll) {
  static const CollectiveDescriptor* const kTimed[] = {&kAllreduceDescriptor, &kBroadcastDescriptor,
                                                       &kAllgatherDescriptor, &kReduceScatterDescriptor};
  for (const CollectiveDescriptor* descriptor : kTimed) {
    if (descriptor->coll == coll) return *descriptor;
  }
  throw std::invalid_argument("matex-bench does not time collective " + std::to_string(static_cast<int>(coll)));
}

void prepare_reduction(const RankCall& call, const ReferencePatterns& patterns, uint64_t seq, bool poison,
                       size_t inputs) {
  if (call.spec.in_place) {
    patterns.fill_input(call.rank, seq, 0, inputs, call.recv);
    return;
  }
  patterns.fill_input(call.rank, seq, 0, inputs, call.send);
  if (poison) std::memset(call.recv, kPoison, call.spec.count * matex_dtype_size(call.spec.dtype));
}

size_t call_count_for(matex_collective_t coll, size_t bytes, size_t element_bytes, int world_size) {
  return bytes / element_bytes / (descriptor_of(coll).count_per_rank ? static_cast<size_t>(world_size) : 1);
}

size_t row_elements(matex_collective_t coll, size_t call_count, int world_size) {
  return call_count * (descriptor_of(coll).count_per_rank ? static_cast<size_t>(world_size) : 1);
}

}  // namespace matexbench
