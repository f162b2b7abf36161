// backend_gather.cc - the gathers and reduce-scatters every rank takes part
// in equally: allgather (list and flat forms, coalesced) and reduce_scatter
// (list and flat forms, coalesced). List forms go through one flat buffer.
#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>

#include "backend.h"
#include "dense_buffer.h"
#include "tensor_types.h"

namespace matex_torch {

namespace {

// Checks that `parts` holds `size` tensors shaped like `like`.
void require_parts(const std::vector<at::Tensor>& parts, const at::Tensor& like, int size, const char* collective) {
  TORCH_CHECK(static_cast<int>(parts.size()) == size, "matex: ", collective, " needs one tensor per rank (", size,
              "), got ", parts.size());
  for (size_t r = 0; r < parts.size(); ++r) {
    require_usable_tensor(parts[r], collective, like.device());
    TORCH_CHECK(parts[r].numel() == like.numel() && parts[r].scalar_type() == like.scalar_type(), "matex: ",
                collective, ": tensor ", r, " is ", parts[r].scalar_type(), "[", parts[r].numel(),
                "] but the input is ", like.scalar_type(), "[", like.numel(), "]");
  }
}

// One flat allgather of `input` into `output` (size * input's elements).
void gather_flat(matex_comm_t comm, int rank, const DenseBuffer& output, const at::Tensor& input) {
  const Movement movement = movement_of(input.scalar_type());
  const size_t count = static_cast<size_t>(input.numel()) * movement.per_element;
  const size_t bytes = static_cast<size_t>(input.nbytes());
  const void* send = input.data_ptr();
  if (count > 0 && send == static_cast<const char*>(output.data()) + rank * bytes) send = MATEX_IN_PLACE;
  check_status(matex_allgather(comm, send, output.data(), count, movement.dtype), "allgather");
  output.write_back();
}

void reduce_scatter_flat(matex_comm_t comm, const DenseBuffer& output, const at::Tensor& given_input,
                         const c10d::ReduceOp& op, const char* collective) {
  // An output inside the input (NCCL's in-place form: the rank's block) would
  // alias libmatexcomm's buffers: reduce from a copy then.
  const at::Tensor input =
      at::get_overlap_status(output.dense(), given_input) == at::MemOverlapStatus::No ? given_input : given_input.clone();
  const matex_dtype_t dtype = reduction_dtype(input.scalar_type(), collective);
  const Reduction reduction = reduction_of(op, input.scalar_type(), collective);
  if (reduction.premultiplied && input.is_cuda()) {
    // libmatexcomm's pre-multiplied sum is host-only: scale on the stream, then sum.
    const at::Tensor scaled = input * reduction.factor;
    check_status(matex_reduce_scatter(comm, scaled.data_ptr(), output.data(), output.numel(), dtype, MATEX_SUM),
                 std::string(collective) + " (PREMUL_SUM)");
  } else if (reduction.premultiplied) {
    check_status(matex_reduce_scatter_premul_sum(comm, input.data_ptr(), output.data(), output.numel(), dtype,
                                                 reduction.factor),
                 std::string(collective) + " (PREMUL_SUM)");
  } else {
    check_status(matex_reduce_scatter(comm, input.data_ptr(), output.data(), output.numel(), dtype, reduction.op),
                 collective);
  }
  output.write_back();
}

}  // namespace

c10::intrusive_ptr<c10d::Work> MatexBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                             const c10d::AllgatherOptions& opts) {
  DenseBuffer out(output, "all_gather_into_tensor");
  require_usable_tensor(input, "all_gather_into_tensor", output.device());
  TORCH_CHECK(output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "matex: all_gather_into_tensor needs an output of ", size_, " x the input's ", input.numel(),
              " elements of ", input.scalar_type(), ", got ", output.scalar_type(), "[", output.numel(), "]");
  at::Tensor in = input.contiguous();
  const int rank = rank_;
  return launch(c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {input}, {output}, opts.timeout, opts.asyncOp,
                [out, in, rank](matex_comm_t comm) { gather_flat(comm, rank, out, in); });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1, "matex: allgather takes one input and one output list");
  require_usable_tensor(inputs[0], "allgather");
  require_parts(outputs[0], inputs[0], size_, "allgather");
  at::Tensor in = inputs[0].contiguous();
  std::vector<at::Tensor> parts = outputs[0];
  const int rank = rank_;
  const int size = size_;
  return launch(c10d::OpType::ALLGATHER, "allgather", inputs, parts, opts.timeout, opts.asyncOp,
                [in, parts, rank, size](matex_comm_t comm) {
                  at::Tensor flat = at::empty({size, in.numel()}, in.options());
                  gather_flat(comm, rank, DenseBuffer(flat, "allgather"), in.reshape({-1}));
                  for (int r = 0; r < size; ++r) parts[r].copy_(flat[r].view(parts[r].sizes()));
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "matex: allgather_coalesced needs one output list per input");
  std::vector<at::Tensor> ins;
  std::vector<at::Tensor> all_parts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_usable_tensor(inputs[i], "allgather_coalesced", inputs[0].device());
    require_parts(outputs[i], inputs[i], size_, "allgather_coalesced");
    ins.push_back(inputs[i].contiguous());
    all_parts.insert(all_parts.end(), outputs[i].begin(), outputs[i].end());
  }
  const int rank = rank_;
  const int size = size_;
  return launch(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", inputs, all_parts, opts.timeout, opts.asyncOp,
                [ins, all_parts, rank, size](matex_comm_t comm) {
                  for (size_t i = 0; i < ins.size(); ++i) {
                    at::Tensor flat = at::empty({size, ins[i].numel()}, ins[i].options());
                    gather_flat(comm, rank, DenseBuffer(flat, "allgather_coalesced"), ins[i].reshape({-1}));
                    for (int r = 0; r < size; ++r) {
                      const at::Tensor& part = all_parts[i * size + r];
                      part.copy_(flat[r].view(part.sizes()));
                    }
                  }
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "matex: allgather_into_tensor_coalesced needs one output per input");
  std::vector<DenseBuffer> outs;
  std::vector<at::Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_usable_tensor(inputs[i], "allgather_into_tensor_coalesced", outputs[0].device());
    require_usable_tensor(outputs[i], "allgather_into_tensor_coalesced", outputs[0].device());
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * size_ && outputs[i].scalar_type() == inputs[i].scalar_type(),
                "matex: allgather_into_tensor_coalesced: output ", i, " must hold ", size_, " x input ", i);
    outs.emplace_back(outputs[i], "allgather_into_tensor_coalesced");
    ins.push_back(inputs[i].contiguous());
  }
  const int rank = rank_;
  return launch(c10d::OpType::COALESCED, "allgather_into_tensor_coalesced", inputs, outputs, opts.timeout, opts.asyncOp,
                [outs, ins, rank](matex_comm_t comm) {
                  for (size_t i = 0; i < ins.size(); ++i) gather_flat(comm, rank, outs[i], ins[i]);
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::ReduceScatterOptions& opts) {
  DenseBuffer out(output, "reduce_scatter_tensor");
  require_usable_tensor(input, "reduce_scatter_tensor", output.device());
  TORCH_CHECK(input.numel() == output.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "matex: reduce_scatter_tensor needs an input of ", size_, " x the output's ", output.numel(),
              " elements of ", output.scalar_type(), ", got ", input.scalar_type(), "[", input.numel(), "]");
  reduction_of(opts.reduceOp, input.scalar_type(), "reduce_scatter_tensor");  // reject bad ops here, not later
  at::Tensor in = input.contiguous();
  const c10d::ReduceOp op = opts.reduceOp;
  return launch(c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {input}, {output}, opts.timeout, opts.asyncOp,
                [out, in, op](matex_comm_t comm) { reduce_scatter_flat(comm, out, in, op, "reduce_scatter_tensor"); });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                            std::vector<std::vector<at::Tensor>>& inputs,
                                                            const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1, "matex: reduce_scatter takes one output and one input list");
  DenseBuffer out(outputs[0], "reduce_scatter");
  require_parts(inputs[0], outputs[0], size_, "reduce_scatter");
  reduction_of(opts.reduceOp, outputs[0].scalar_type(), "reduce_scatter");
  std::vector<at::Tensor> parts = inputs[0];
  const c10d::ReduceOp op = opts.reduceOp;
  return launch(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", inputs[0], outputs, opts.timeout, opts.asyncOp,
                [out, parts, op](matex_comm_t comm) {
                  std::vector<at::Tensor> flat_parts;
                  for (const at::Tensor& part : parts) flat_parts.push_back(part.reshape({-1}));
                  reduce_scatter_flat(comm, out, at::cat(flat_parts), op, "reduce_scatter");
                });
}

c10::intrusive_ptr<c10d::Work> MatexBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "matex: reduce_scatter_tensor_coalesced needs one output per input");
  std::vector<DenseBuffer> outs;
  std::vector<at::Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_usable_tensor(inputs[i], "reduce_scatter_tensor_coalesced", outputs[0].device());
    require_usable_tensor(outputs[i], "reduce_scatter_tensor_coalesced", outputs[0].device());
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * size_ && outputs[i].scalar_type() == inputs[i].scalar_type(),
                "matex: reduce_scatter_tensor_coalesced: input ", i, " must hold ", size_, " x output ", i);
    reduction_of(opts.reduceOp, inputs[i].scalar_type(), "reduce_scatter_tensor_coalesced");
    outs.emplace_back(outputs[i], "reduce_scatter_tensor_coalesced");
    ins.push_back(inputs[i].contiguous());
  }
  const c10d::ReduceOp op = opts.reduceOp;
  return launch(c10d::OpType::COALESCED, "reduce_scatter_tensor_coalesced", inputs, outputs, opts.timeout, opts.asyncOp,
                [outs, ins, op](matex_comm_t comm) {
                  for (size_t i = 0; i < ins.size(); ++i) {
                    reduce_scatter_flat(comm, outs[i], ins[i], op, "reduce_scatter_tensor_coalesced");
                  }
                });
}

}  // namespace matex_torch
