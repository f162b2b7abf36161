// xla_lowerings.cc - XLA kernels (tf2xla) for MatexAllreduce, MatexBroadcast
// and MatexAllgather, so that a function compiled by XLA (jit_compile=True,
// auto-clustering) keeps matex's collectives inside it. Each op becomes one
// side-effecting custom call to xla_host_call.cc with its plan (names,
// counts, dtype, reduction) fixed at compile time; XLA neither merges,
// reorders across other side effects, nor removes it.
// Cost: none at compile time beyond the call; at run time, xla_host_call.cc.
// Preconditions: static shapes (XLA's own); operands and results in the
// default (row-major) layout, which the call asks for; allgather needs the
// same first dimension on every rank (its result shape is fixed at compile
// time: ranks x rows), checked when it runs. XLA:CPU only: on a GPU the
// XLA device has no host buffers to hand to the engine, and the op is left
// to TensorFlow's kernels (a GPU cluster with matex ops is not compiled).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime.h"
#include "tensor_conversion.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tensorflow/core/framework/kernel_def_builder.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tf_compat.h"
#include "xla/shape_util.h"
#include "xla_call_plan.h"

namespace matex_tf {

namespace {

using tensorflow::XlaOpKernel;
using tensorflow::XlaOpKernelContext;

xla::Shape in_default_layout(const xla::Shape& shape) {
  const std::vector<int64_t> dims(shape.dimensions().begin(), shape.dimensions().end());
  return xla::ShapeUtil::MakeShapeWithDescendingLayout(shape.element_type(), dims);
}

// The operand's shape in the default layout, or an error naming the tensor.
absl::Status default_layout_shape(XlaOpKernelContext* ctx, int index, const std::string& name, xla::Shape* out) {
  absl::StatusOr<xla::Shape> shape = ctx->InputXlaShape(index);
  if (!shape.ok()) return shape.status();
  if (!shape->is_static()) {
    return absl::InvalidArgumentError("matex (XLA): '" + name + "' has a dynamic shape; XLA needs static shapes");
  }
  *out = in_default_layout(*shape);
  return absl::OkStatus();
}

size_t elements_of(const xla::Shape& shape) { return static_cast<size_t>(xla::ShapeUtil::ElementsIn(shape)); }

// The collective emitted last into each computation being built, so that the
// next one can take its result as an extra operand (ignored by the host
// call): XLA then runs a computation's collectives one after the other in
// the order they were traced, the same on every rank. Without that, XLA:CPU
// may start independent calls in another order on another rank, and two
// calls that each block a thread until every rank has joined them could
// wait on each other. One per compilation (its step container).
class CollectiveChain : public tensorflow::ResourceBase {
 public:
  std::string DebugString() const override { return "matex collective order"; }

  // The last collective emitted into this builder, if any.
  std::optional<xla::XlaOp> last(xla::XlaBuilder* builder) {
    auto found = last_.find(builder);
    if (found == last_.end() || found->second.first != builder->name()) return std::nullopt;
    return found->second.second;
  }
  void set_last(xla::XlaBuilder* builder, xla::XlaOp op) { last_[builder] = {builder->name(), op}; }

 private:
  std::map<const xla::XlaBuilder*, std::pair<std::string, xla::XlaOp>> last_;
};

absl::Status chain_of(XlaOpKernelContext* ctx, CollectiveChain** chain) {
  tensorflow::OpKernelContext* kernel = ctx->op_kernel_context();
  if (kernel->step_container() == nullptr) return absl::InternalError("matex (XLA): no step container");
  return kernel->step_container()->LookupOrCreate<CollectiveChain>(
      kernel->resource_manager(), "matex_collective_chain", chain, [](CollectiveChain** made) {
        *made = new CollectiveChain;
        return absl::OkStatus();
      });
}

// Emits the call: `operands` in, one result per operand (a tuple when there are several).
void emit(XlaOpKernelContext* ctx, std::vector<xla::XlaOp> operands, std::vector<xla::Shape> in_shapes,
          const std::vector<xla::Shape>& out_shapes, const XlaCallPlan& plan) {
  for (const XlaCallPlan::Tensor& t : plan.tensors) {
    OP_REQUIRES(ctx, t.name.find('\n') == std::string::npos,
                absl::InvalidArgumentError("matex (XLA): tensor name '" + t.name + "' holds a newline"));
  }
  CollectiveChain* chain = nullptr;
  OP_REQUIRES_OK(ctx, chain_of(ctx, &chain));
  tensorflow::core::ScopedUnref unref(chain);
  xla::XlaBuilder* builder = ctx->builder();
  if (std::optional<xla::XlaOp> previous = chain->last(builder)) {
    absl::StatusOr<xla::Shape> shape = builder->GetShape(*previous);
    OP_REQUIRES_OK(ctx, shape.status());
    operands.push_back(*previous);
    in_shapes.push_back(in_default_layout(*shape));
  }
  const bool tuple = out_shapes.size() > 1;
  const xla::Shape result = tuple ? xla::ShapeUtil::MakeTupleShape(out_shapes) : out_shapes[0];
  xla::XlaOp call = xla::CustomCallWithLayout(
      builder, kXlaHostCallTarget, operands, result, in_shapes, plan.encode(), /*has_side_effect=*/true,
      /*output_operand_aliasing=*/{}, /*literal=*/nullptr, xla::CustomCallSchedule::SCHEDULE_NONE,
      xla::CustomCallApiVersion::API_VERSION_STATUS_RETURNING_UNIFIED);
  std::vector<xla::XlaOp> outputs;
  for (size_t i = 0; i < out_shapes.size(); ++i) {
    outputs.push_back(tuple ? xla::GetTupleElement(call, static_cast<int64_t>(i)) : call);
    ctx->SetOutput(static_cast<int>(i), outputs.back());
  }
  chain->set_last(builder, outputs.front());
}

// The plan needs the job's size (allgather's result shape, broadcast's root
// check) when XLA compiles: refuse to compile before matex.init().
bool initialized(XlaOpKernelContext* ctx) {
  matex_engine_t engine = nullptr;
  const absl::Status running = running_engine(&engine);
  if (!running.ok()) ctx->SetStatus(running);
  return running.ok();
}

// XLA's lowerings run over the job's ranks: an op of another process set
// fails to compile (it runs outside jit_compile).
absl::Status job_only(tensorflow::OpKernelConstruction* c) {
  int64_t process_set_id = 0;
  TF_RETURN_IF_ERROR(c->GetAttr("process_set_id", &process_set_id));
  if (process_set_id == 0) return absl::OkStatus();
  return absl::UnimplementedError("matex (XLA): collectives of a process set other than the job's cannot be "
                                  "compiled with XLA; run them without jit_compile");
}

class XlaAllreduce : public XlaOpKernel {
 public:
  explicit XlaAllreduce(tensorflow::OpKernelConstruction* c) : XlaOpKernel(c) {
    std::string reduce_op, name;
    float prescale = 1.0f, postscale = 1.0f;
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &reduce_op));
    OP_REQUIRES_OK(c, c->GetAttr("prescale", &prescale));
    OP_REQUIRES_OK(c, c->GetAttr("postscale", &postscale));
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    OP_REQUIRES_OK(c, job_only(c));
    OP_REQUIRES(c, to_matex_op(reduce_op, &plan_.op), absl::InvalidArgumentError("matex: unknown reduce_op " + reduce_op));
    plan_.coll = MATEX_COLL_ALLREDUCE;
    plan_.prescale = prescale;
    plan_.postscale = postscale;
    base_name_ = tensor_name_of(name, this->name());
  }

  void Compile(XlaOpKernelContext* ctx) override {
    if (!initialized(ctx)) return;
    XlaCallPlan plan = plan_;
    OP_REQUIRES_OK(ctx, dtype_of(ctx->input_type(0), base_name_, &plan.dtype));  // the op's T excludes bool
    OP_REQUIRES_OK(ctx, check_scaling(plan.dtype, plan.op, plan.prescale, plan.postscale, base_name_));
    const int n = ctx->num_inputs();
    std::vector<xla::XlaOp> operands;
    std::vector<xla::Shape> shapes(n);
    for (int i = 0; i < n; ++i) {
      XlaCallPlan::Tensor t;
      t.name = n == 1 ? base_name_ : base_name_ + "/" + std::to_string(i);
      OP_REQUIRES_OK(ctx, default_layout_shape(ctx, i, t.name, &shapes[i]));
      t.count = elements_of(shapes[i]);
      plan.tensors.push_back(std::move(t));
      operands.push_back(ctx->Input(i));
    }
    emit(ctx, operands, shapes, shapes, plan);
  }

 private:
  XlaCallPlan plan_;
  std::string base_name_;
};

class XlaBroadcast : public XlaOpKernel {
 public:
  explicit XlaBroadcast(tensorflow::OpKernelConstruction* c) : XlaOpKernel(c) {
    std::string name;
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &plan_.root));
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    OP_REQUIRES_OK(c, job_only(c));
    plan_.coll = MATEX_COLL_BROADCAST;
    base_name_ = tensor_name_of(name, this->name());
  }

  void Compile(XlaOpKernelContext* ctx) override {
    if (!initialized(ctx)) return;
    XlaCallPlan plan = plan_;
    const int size = matex_tf_size();
    OP_REQUIRES(ctx, plan.root >= 0 && plan.root < size,
                absl::InvalidArgumentError("matex: '" + base_name_ + "': root_rank " + std::to_string(plan.root) +
                                           " is not a rank of this job (0.." + std::to_string(size - 1) + ")"));
    OP_REQUIRES_OK(ctx, dtype_of(ctx->input_type(0), base_name_, &plan.dtype));
    std::vector<xla::Shape> shapes(1);
    OP_REQUIRES_OK(ctx, default_layout_shape(ctx, 0, base_name_, &shapes[0]));
    plan.tensors.push_back({elements_of(shapes[0]), 1, base_name_});
    emit(ctx, {ctx->Input(0)}, shapes, shapes, plan);
  }

 private:
  XlaCallPlan plan_;
  std::string base_name_;
};

class XlaAllgather : public XlaOpKernel {
 public:
  explicit XlaAllgather(tensorflow::OpKernelConstruction* c) : XlaOpKernel(c) {
    std::string name;
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name));
    OP_REQUIRES_OK(c, job_only(c));
    plan_.coll = MATEX_COLL_ALLGATHER;
    base_name_ = tensor_name_of(name, this->name());
  }

  void Compile(XlaOpKernelContext* ctx) override {
    if (!initialized(ctx)) return;
    XlaCallPlan plan = plan_;
    OP_REQUIRES_OK(ctx, dtype_of(ctx->input_type(0), base_name_, &plan.dtype));
    xla::Shape in;
    OP_REQUIRES_OK(ctx, default_layout_shape(ctx, 0, base_name_, &in));
    OP_REQUIRES(ctx, in.dimensions().size() >= 1,
                absl::InvalidArgumentError("matex: '" + base_name_ + "': allgather needs a tensor of rank 1 or more"));
    std::vector<int64_t> dims(in.dimensions().begin(), in.dimensions().end());
    const size_t rows = static_cast<size_t>(dims[0]);
    OP_REQUIRES(ctx, rows == 0 || elements_of(in) > 0,
                absl::InvalidArgumentError("matex (XLA): '" + base_name_ + "': rows of zero elements cannot be "
                                           "gathered inside an XLA-compiled function"));
    plan.tensors.push_back({rows, rows == 0 ? 1 : elements_of(in) / rows, base_name_});
    dims[0] *= matex_tf_size();
    emit(ctx, {ctx->Input(0)}, {in}, {xla::ShapeUtil::MakeShapeWithDescendingLayout(in.element_type(), dims)}, plan);
  }

 private:
  XlaCallPlan plan_;
  std::string base_name_;
};

REGISTER_XLA_OP(Name("MatexAllreduce").Device(tensorflow::DEVICE_CPU_XLA_JIT), XlaAllreduce);
REGISTER_XLA_OP(Name("MatexBroadcast").Device(tensorflow::DEVICE_CPU_XLA_JIT), XlaBroadcast);
REGISTER_XLA_OP(Name("MatexAllgather").Device(tensorflow::DEVICE_CPU_XLA_JIT), XlaAllgather);

template <typename Kernel>
tensorflow::OpKernel* make_kernel(tensorflow::OpKernelConstruction* c) {
  return new Kernel(c);
}

// From TensorFlow's listing ("device='XLA_CPU_JIT'; ..."): its KernelList proto
// is not safe to walk from here (the inline protobuf code is not TensorFlow's).
bool has_jit_kernel(const char* op) {
  const std::string listing = tensorflow::KernelsRegisteredForOp(op);
  return listing.find(std::string("'") + tensorflow::DEVICE_CPU_XLA_JIT + "'") != std::string::npos;
}

// REGISTER_XLA_OP only records the lowering: TensorFlow turns every recorded
// lowering into a kernel of the XLA:CPU compilation device once, the first
// time it needs them. When that happened before this library was loaded (the
// process ran TensorFlow ops first), the ops get their kernels here, as that
// step would have made them; when it has not happened yet, nothing is done
// here (running it early would leave out lowerings registered after ours).
void register_late_jit_kernels() {
  // TensorFlow's own ops have theirs once that step ran; before, it will make ours with everyone's.
  if (!has_jit_kernel("Identity")) return;
  struct Late {
    const char* op;
    tensorflow::OpKernel* (*factory)(tensorflow::OpKernelConstruction*);
  };
  for (const Late& late : {Late{"MatexAllreduce", make_kernel<XlaAllreduce>},
                           Late{"MatexBroadcast", make_kernel<XlaBroadcast>},
                           Late{"MatexAllgather", make_kernel<XlaAllgather>}}) {
    if (has_jit_kernel(late.op)) continue;
    const tensorflow::KernelDef* def =
        tensorflow::KernelDefBuilder(late.op).Device(tensorflow::DEVICE_CPU_XLA_JIT).Build();
    new tensorflow::kernel_factory::OpKernelRegistrar(def, "XlaJitOp", late.factory);  // lives as long as the process
  }
}

}  // namespace

}  // namespace matex_tf

// 1: this library lowers its ops for XLA:CPU (matex/_runtime.py asks, through
// ctypes, right after loading it, which also makes sure the lowerings have
// their compilation kernels).
extern "C" __attribute__((visibility("default"))) int matex_tf_xla_lowerings(void) {
  static const bool registered = (matex_tf::register_late_jit_kernels(), true);
  return registered ? 1 : 0;
}
