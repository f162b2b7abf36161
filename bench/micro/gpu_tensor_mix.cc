// gpu_tensor_mix.cc - see gpu_tensor_mix.h.
#include "gpu_tensor_mix.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "resnet50_shapes.h"

namespace matexbench {
namespace {

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Parameters per tensor, in the list's order ("name<TAB>AxBxC" lines).
std::vector<size_t> resnet50_parameter_counts() {
  std::vector<size_t> counts;
  std::istringstream lines(kResnet50Shapes);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw std::runtime_error("resnet50_shapes.txt: no tab in '" + line + "'");
    size_t count = 1;
    std::istringstream dims(line.substr(tab + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) count *= std::stoul(dim);
    counts.push_back(count);
  }
  return counts;
}

// Fills the offsets of a mix whose sizes are set.
TensorMix lay_out(std::string name, std::vector<size_t> bytes) {
  TensorMix mix;
  mix.name = std::move(name);
  mix.bytes = std::move(bytes);
  size_t source = 0;
  for (size_t size : mix.bytes) {
    mix.source_offset.push_back(source);
    mix.tensor_offset.push_back(mix.tensor_span);
    mix.fusion_offset.push_back(mix.fusion_span);
    source += size;
    mix.tensor_span = round_up(mix.tensor_span + size, kTensorAlignment);
    mix.fusion_span = round_up(mix.fusion_span + size, kFusionAlignment);
  }
  return mix;
}

}  // namespace

TensorMix equal_tensor_mix(size_t total, size_t count) {
  return lay_out("equal", std::vector<size_t>(count, total / count));
}

TensorMix resnet50_tensor_mix(size_t total) {
  const std::vector<size_t> parameters = resnet50_parameter_counts();
  size_t all = 0;
  for (size_t p : parameters) all += p;
  const size_t elements = total / 4;
  std::vector<size_t> bytes;
  size_t used = 0;
  for (size_t p : parameters) {
    const size_t share = std::max<size_t>(1, static_cast<size_t>(static_cast<double>(elements) * p / all));
    bytes.push_back(share * 4);
    used += share * 4;
  }
  // The largest tensor absorbs the rounding (it holds ~9% of the parameters;
  // the one-element minimums can only push `used` past `total` for tiny totals).
  auto largest = std::max_element(bytes.begin(), bytes.end());
  if (used > total && *largest <= used - total)
    throw std::runtime_error("resnet50 mix: " + std::to_string(total) + " bytes are too few for its tensors");
  *largest = *largest + total - used;
  return lay_out("resnet50", bytes);
}

size_t tensor_mix_capacity(size_t total, size_t tensors) {
  return total + tensors * std::max(kTensorAlignment, kFusionAlignment);
}

size_t resnet50_tensor_count() { return resnet50_parameter_counts().size(); }

}  // namespace matexbench
