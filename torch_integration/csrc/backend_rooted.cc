// backend_rooted.cc - collectives with a root (gather, scatter) and the
// all-to-alls. List forms go through one flat buffer.
#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>

#include "backend.h"
#include "dense_buffer.h"
#include "tensor_types.h"

namespace matex_torch {

namespace {

// Elements per first-dimension row (1 for a 0-d tensor, 0 when dim 0 is 0).
size_t row_elements(const at::Tensor& tensor) {
  if (tensor.dim() == 0) return 1;
  return tensor.size(0) == 0 ? 0 : static_cast<size_t>(tensor.numel() / tensor.size(0));
}

// Counts in matex elements for splits given in rows (empty: equal rows).
std::vector<size_t> split_counts(const std::vector<int64_t>& splits, const at::Tensor& tensor, int size,
                                 size_t per_element, const char* argument) {
  std::vector<size_t> counts(size);
  const size_t row = row_elements(tensor) * per_element;
  if (splits.empty()) {
    const int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
    TORCH_CHECK(rows % size == 0, "matex: all_to_all_single: ", argument, " has ", rows,
                " rows, which do not split evenly over ", size, " ranks; pass split sizes");
    for (size_t& count : counts) count = static_cast<size_t>(rows / size) * row;
    return counts;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "matex: all_to_all_single: ", argument, " has ", splits.size(),
              " entries for ", size, " ranks");
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    TORCH_CHECK(splits[r] >= 0, "matex: all_to_all_single: ", argument, "[", r, "] = ", splits[r], " is negative");
    counts[r] = static_cast<size_t>(splits[r]) * row;
    total += splits[r];
  }
  TORCH_CHECK(tensor.dim() > 0 && total == tensor.size(0), "matex: all_to_all_single: ", argument, " add up to ",
              total, " rows but the tensor has ", tensor.dim() == 0 ? 1 : tensor.size(0));
  return counts;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> MatexBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                    std::vector<at::Tensor>& inputs,
                                                    const c10d::GatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1, "matex: gather takes one input tensor");
  require_host_tensor(inputs[0], "gather");
  const int root = static_cast<int>(opts.rootRank);
  const bool at_root = root == rank_;
  std::vector<at::Tensor> parts;
  if (at_root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_, "matex: gather needs ", size_,
                " output tensors at the root");
    parts = outputs[0];
    for (const at::Tensor& part : parts) {
      require_host_tensor(part, "gather");
      TORCH_CHECK(part.numel() == inputs[0].numel() && part.scalar_type() == inputs[0].scalar_type(),
                  "matex: gather: every output must match the input's ", inputs[0].scalar_type(), "[",
                  inputs[0].numel(), "]");
    }
  }
  at::Tensor in = inputs[0].contiguous();
  const int size = size_;
  return launch(c10d::OpType::GATHER, "gather", inputs, parts, opts.timeout, opts.asyncOp,
                [in, parts, root, at_root, size](matex_comm_t comm) {
                  const Movement movement = movement_of(in.scalar_type());
                  at::Tensor flat = at_root ? at::empty({size, in.numel()}, in.options()) : at::Tensor();
                  check_status(matex_gather(comm, in.data_ptr(), at_root ? flat.data_ptr() : nullptr,
                                            static_cast<size_t>(in.numel()) * movement.per_element, movement.dtype,
                                            root),
                               "gather");
                  for (size_t r = 0; r < parts.size(); ++r) parts[r].copy_(flat[r].view(parts[r].sizes()));
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::gather_into_tensor(at::Tensor& output, at::Tensor& input,
                                                                const c10d::GatherOptions& opts) {
  require_host_tensor(input, "gather_into_tensor");
  const int root = static_cast<int>(opts.rootRank);
  const bool at_root = root == rank_;
  std::vector<at::Tensor> outs;
  if (at_root) {
    require_host_tensor(output, "gather_into_tensor");
    TORCH_CHECK(output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
                "matex: gather_into_tensor needs an output of ", size_, " x the input at the root");
    outs.push_back(output);
  }
  at::Tensor in = input.contiguous();
  at::Tensor out = at_root ? output : at::Tensor();
  return launch(c10d::OpType::GATHER, "gather_into_tensor", {input}, outs, opts.timeout, opts.asyncOp,
                [in, out, root, at_root](matex_comm_t comm) {
                  const Movement movement = movement_of(in.scalar_type());
                  at::Tensor dense = at_root ? out.contiguous() : at::Tensor();
                  check_status(matex_gather(comm, in.data_ptr(), at_root ? dense.data_ptr() : nullptr,
                                            static_cast<size_t>(in.numel()) * movement.per_element, movement.dtype,
                                            root),
                               "gather_into_tensor");
                  if (at_root && !dense.is_same(out)) out.copy_(dense);
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::scatter(std::vector<at::Tensor>& outputs,
                                                     std::vector<std::vector<at::Tensor>>& inputs,
                                                     const c10d::ScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1, "matex: scatter takes one output tensor");
  DenseBuffer out(outputs[0], "scatter", /*device_ok=*/false);
  const int root = static_cast<int>(opts.rootRank);
  const bool at_root = root == rank_;
  std::vector<at::Tensor> parts;
  if (at_root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_, "matex: scatter needs ", size_,
                " input tensors at the root");
    for (const at::Tensor& part : inputs[0]) {
      require_host_tensor(part, "scatter");
      TORCH_CHECK(part.numel() == outputs[0].numel() && part.scalar_type() == outputs[0].scalar_type(),
                  "matex: scatter: every input must match the output's ", outputs[0].scalar_type(), "[",
                  outputs[0].numel(), "]");
      parts.push_back(part.reshape({-1}));
    }
  }
  const at::ScalarType type = outputs[0].scalar_type();
  return launch(c10d::OpType::SCATTER, "scatter", parts, outputs, opts.timeout, opts.asyncOp,
                [out, parts, root, at_root, type](matex_comm_t comm) {
                  const Movement movement = movement_of(type);
                  at::Tensor flat = at_root ? at::cat(parts) : at::Tensor();
                  check_status(matex_scatter(comm, at_root ? flat.data_ptr() : nullptr, out.data(),
                                             out.numel() * movement.per_element, movement.dtype, root),
                               "scatter");
                  out.write_back();
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                           std::vector<int64_t>& output_splits,
                                                           std::vector<int64_t>& input_splits,
                                                           const c10d::AllToAllOptions& opts) {
  DenseBuffer out(output, "all_to_all_single", /*device_ok=*/false);
  require_host_tensor(input, "all_to_all_single");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "matex: all_to_all_single: output is ",
              output.scalar_type(), " but input is ", input.scalar_type());
  const Movement movement = movement_of(input.scalar_type());
  std::vector<size_t> send_counts = split_counts(input_splits, input, size_, movement.per_element, "input_split_sizes");
  std::vector<size_t> recv_counts =
      split_counts(output_splits, output, size_, movement.per_element, "output_split_sizes");
  at::Tensor in = input.contiguous();
  if (at::get_overlap_status(out.dense(), in) != at::MemOverlapStatus::No) in = in.clone();  // no aliasing
  return launch(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {input}, {output}, opts.timeout, opts.asyncOp,
                [out, in, movement, send_counts, recv_counts](matex_comm_t comm) {
                  check_status(matex_alltoallv(comm, in.data_ptr(), send_counts.data(), nullptr, out.data(),
                                               recv_counts.data(), nullptr, movement.dtype),
                               "all_to_all_single");
                  out.write_back();
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
              "matex: all_to_all needs ", size_, " input and output tensors, got ", inputs.size(), " and ",
              outputs.size());
  const at::ScalarType type = inputs[0].scalar_type();
  std::vector<at::Tensor> ins;
  for (int r = 0; r < size_; ++r) {
    require_host_tensor(inputs[r], "all_to_all");
    require_host_tensor(outputs[r], "all_to_all");
    TORCH_CHECK(inputs[r].scalar_type() == type && outputs[r].scalar_type() == type,
                "matex: all_to_all needs one dtype for every tensor");
    ins.push_back(inputs[r].reshape({-1}));
  }
  std::vector<at::Tensor> outs = outputs;
  return launch(c10d::OpType::ALLTOALL, "all_to_all", inputs, outputs, opts.timeout, opts.asyncOp,
                [ins, outs, type](matex_comm_t comm) {
                  const Movement movement = movement_of(type);
                  std::vector<size_t> send_counts, recv_counts;
                  int64_t received = 0;
                  for (size_t r = 0; r < ins.size(); ++r) {
                    send_counts.push_back(static_cast<size_t>(ins[r].numel()) * movement.per_element);
                    recv_counts.push_back(static_cast<size_t>(outs[r].numel()) * movement.per_element);
                    received += outs[r].numel();
                  }
                  at::Tensor send = at::cat(ins);
                  at::Tensor recv = at::empty({received}, send.options());
                  check_status(matex_alltoallv(comm, send.data_ptr(), send_counts.data(), nullptr, recv.data_ptr(),
                                               recv_counts.data(), nullptr, movement.dtype),
                               "all_to_all");
                  int64_t offset = 0;
                  for (const at::Tensor& part : outs) {
                    part.copy_(recv.narrow(0, offset, part.numel()).view(part.sizes()));
                    offset += part.numel();
                  }
                });
}

}  // namespace matex_torch
