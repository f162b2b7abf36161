// batch_chunks.cuh - how the batched kernels share out a launch's tensors:
// each tensor is cut into chunks of a fixed size, tensor i owning chunks
// [first_chunk[i], first_chunk[i + 1]), and the blocks stride over all chunks
// of all tensors, so one large tensor next to many small ones still gets
// every block.
#pragma once

#include <cstddef>
#include <cstdint>

#include <string>

#include "core/error.h"

namespace matexcomm::gpu {

// The tensor that owns `chunk`: the last i with first_chunk[i] <= chunk
// (first_chunk is increasing, first_chunk[0] == 0). Binary search, lg n steps.
__device__ inline uint32_t item_of_chunk(const uint32_t* first_chunk, uint32_t item_count, uint32_t chunk) {
  uint32_t low = 0;
  uint32_t high = item_count - 1;
  while (low < high) {
    const uint32_t middle = (low + high + 1) / 2;
    if (first_chunk[middle] <= chunk) low = middle;
    else high = middle - 1;
  }
  return low;
}

// Host side: fills Batch (members items, first_chunk, item_count, chunk_count)
// with up to `capacity` items, skipping items of no chunks (chunks_of(item) ==
// 0), and calls launch(batch) for every full batch and for the last one.
template <class Batch, class Item, class ChunksOf, class Launch>
void launch_in_batches(const Item* items, size_t n, size_t capacity, const ChunksOf& chunks_of, const Launch& launch) {
  Batch batch{};
  for (size_t i = 0; i < n; ++i) {
    const size_t chunks = chunks_of(items[i]);
    if (chunks == 0) continue;
    MATEX_REQUIRE(chunks <= UINT32_MAX - batch.chunk_count, MATEX_ERR_INVALID_ARG,
                  "batched kernel: item " + std::to_string(i) + " is too large for one launch");
    batch.items[batch.item_count] = items[i];
    batch.first_chunk[batch.item_count] = batch.chunk_count;
    batch.item_count += 1;
    batch.chunk_count += static_cast<uint32_t>(chunks);
    if (batch.item_count == capacity) {
      launch(batch);
      batch.item_count = 0;
      batch.chunk_count = 0;
    }
  }
  if (batch.item_count > 0) launch(batch);
}

}  // namespace matexcomm::gpu
