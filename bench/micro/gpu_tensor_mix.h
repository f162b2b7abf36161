// gpu_tensor_mix.h - the tensor lists that matex-gpu-microbench packs into a
// fusion buffer and unpacks again: a total split into equal tensors, or into
// ResNet-50's 161 gradient sizes (bench/harness/resnet50_shapes.txt, compiled in)
// scaled to the total. Each list comes with its layout: where each tensor
// lies in the source bytes, in the tensors' own memory and in the fusion
// buffer.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace matexbench {

// Tensors start at multiples of this, as cudaMalloc'd ones (and the
// framework allocators') do.
constexpr size_t kTensorAlignment = 256;
// Fusion buffer entries start at multiples of this (16-byte vector copies).
constexpr size_t kFusionAlignment = 64;

struct TensorMix {
  std::string name;                  // "equal", "resnet50"
  std::vector<size_t> bytes;         // per tensor, multiples of 4 (float32)
  std::vector<size_t> source_offset; // in the reference bytes: tensors back to back
  std::vector<size_t> tensor_offset; // in the tensors' memory (kTensorAlignment)
  std::vector<size_t> fusion_offset; // in the fusion buffer (kFusionAlignment)
  size_t tensor_span = 0;            // bytes of the tensors' memory used
  size_t fusion_span = 0;            // bytes of the fusion buffer used
};

// `count` tensors of total / count bytes (total: a multiple of 4 * count).
TensorMix equal_tensor_mix(size_t total, size_t count);

// ResNet-50's gradients, each total * (its parameters / all parameters)
// rounded down to whole float32 elements (at least one), the largest
// tensor taking what rounding left, so that they add up to total.
TensorMix resnet50_tensor_mix(size_t total);

// Room that any mix of at most `tensors` tensors over `total` bytes needs,
// in the tensors' memory and in the fusion buffer.
size_t tensor_mix_capacity(size_t total, size_t tensors);

// Number of tensors of the ResNet-50 list.
size_t resnet50_tensor_count();

}  // namespace matexbench
