"""horovod.torch's collectives over matex's engine (common/engine.py).

Every call returns at once with an integer handle (the *_async forms) or
waits for its handle; poll() and synchronize() take the handle. Tensors are
matched across ranks by name: the name given, or one drawn from a counter per
kind of call, so ranks must issue unnamed calls in the same order, as with
Horovod. CUDA tensors are staged through host memory.

All-to-all and reduce-scatter run as blocking calls on the communicator
(their *_async forms return a handle that is complete already).
"""
import ctypes
import itertools
import threading

import torch

from ..common import objects, process_sets
from ..common import reduce_ops as _ops
from ..common.engine import ALLGATHER, ALLREDUCE, BROADCAST, engine
from ..common.exceptions import HorovodInternalError

Average, Sum, Adasum, Min, Max, Product = (_ops.Average, _ops.Sum, _ops.Adasum, _ops.Min, _ops.Max,
                                          _ops.Product)

_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
           torch.bfloat16: "bfloat16", torch.int8: "int8", torch.uint8: "uint8", torch.int16: "int16",
           torch.int32: "int32", torch.int64: "int64", torch.bool: "bool"}
for _name in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _name

_UNNAMED_KINDS = ("allgather", "allreduce", "broadcast", "grouped_allgather", "sparse_allreduce")
_counters = {}  # (process set id, kind) -> unnamed calls so far: the next one's number
_counter_lock = threading.Lock()
_handles = {}
_handle_ids = itertools.count(1)
_reserved = set()  # names of operations submitted and not yet synchronized


def _reserve(names, who):
    """Takes names for one operation: a name whose earlier operation has not been synchronized yet is a
    ValueError, as Horovod refuses two operations under one name at once (matex's engine would run the
    second as a new tensor once the first completed, however close the two calls)."""
    with _counter_lock:
        taken = [n for n in names if n in _reserved]
        if taken:
            raise ValueError(f"horovod.torch.{who}: an operation named {taken[0]!r} was submitted and not yet "
                             "synchronized; two operations under one name at once are not allowed")
        _reserved.update(names)


def _release(names):
    with _counter_lock:
        _reserved.difference_update(names)


def _name(kind, name, eng=engine):
    """A tensor's name: the one given, else drawn from a counter per kind and process set (a set's names
    need to match among its own ranks only)."""
    if name is not None:
        return f"{kind}.{name}"
    key = (eng.process_set_id, kind)
    with _counter_lock:
        number = _counters.get(key, 0)
        _counters[key] = number + 1
        return f"{kind}.noname.{number}"


def _engine_of(process_set, who):
    """The engine that runs process_set's collectives on this rank (the global one, or the set's)."""
    return process_sets.check(process_set, who) or engine


def _refuse(names, coll, error, eng=engine):
    """This rank cannot submit `names` (error says why): the engine gets its refusal of each, so that the
    other ranks' requests for them fail with the reason rather than wait, and error is raised here."""
    for tensor_name in names:
        eng.refuse(tensor_name, coll, f"{type(error).__name__}: {error}")
    raise error


def _dtype(tensor, who):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"horovod.torch.{who}: expected a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_sparse:
        raise ValueError(f"horovod.torch.{who}: sparse tensors are not served; pass tensor.to_dense()")
    if tensor.dtype not in _DTYPES:
        raise TypeError(f"horovod.torch.{who}: dtype {tensor.dtype} is not served")
    return _DTYPES[tensor.dtype]


class _Staged:
    """A host, contiguous buffer for `tensor` (itself when it already is one);
    finish() copies results back when it was not."""

    def __init__(self, tensor, copy_in=True):
        self.tensor = tensor
        plain = tensor.device.type == "cpu" and tensor.is_contiguous()
        self.host = tensor if plain else (tensor.detach().to("cpu").contiguous() if copy_in
                                          else torch.empty(tensor.shape, dtype=tensor.dtype))
        self.copy_back = not plain
        self.after = None  # what the result still needs on the host buffer (Horovod's integer scaling)

    def finish(self):
        if self.after is not None:
            self.after()
            self.after = None
        if self.copy_back:
            with torch.no_grad():
                self.tensor.copy_(self.host)
        return self.tensor


class _Pending:
    def __init__(self, requests, finish):
        self.requests = requests
        self.finish = finish
        self.names = [r.name for r in requests]

    def done(self):
        return all(r.done() for r in self.requests)


def _register(requests, finish):
    handle = next(_handle_ids)
    _handles[handle] = _Pending(requests, finish)
    return handle


def poll(handle):
    """True once the operation behind handle has finished (synchronize() then returns at once)."""
    pending = _handles.get(handle)
    if pending is None:
        raise ValueError(f"horovod.torch.poll: unknown handle {handle!r} (already synchronized?)")
    return pending.done()


def synchronize(handle):
    """Waits for the operation behind handle and returns its result."""
    pending = _handles.pop(handle, None)
    if pending is None:
        raise ValueError(f"horovod.torch.synchronize: unknown handle {handle!r} (already synchronized?)")
    first_error = None
    for request in pending.requests:  # every one, even after a failure: the engine may still write buffers
        try:
            request.wait()
        except HorovodInternalError as error:
            first_error = first_error or error
    _release(pending.names)
    if first_error is not None:
        raise first_error
    return pending.finish()


# ---- allreduce -----------------------------------------------------------------------------------------

# The integer dtypes Horovod scales (in double, truncating back): others fail there.
_SCALED_INTEGERS = ("uint8", "int8", "int32", "int64")


def _integer_factors(tensor, dtype, op, prescale_factor, postscale_factor, who, size):
    """For an integer tensor that Horovod would scale (op Average, a prescale or a postscale): the factors
    it applies, in double, truncating back to the dtype: (prescale, postscale), Average being a postscale
    of 1/size. None for a floating tensor or no scaling; raises TypeError where Horovod cannot scale."""
    if tensor.is_floating_point() or (op != "average" and prescale_factor == 1.0 and postscale_factor == 1.0):
        return None
    if dtype not in _SCALED_INTEGERS:
        raise TypeError(f"horovod.torch.{who}: op=Average, prescale_factor and postscale_factor need a floating "
                        f"tensor or one of {', '.join(_SCALED_INTEGERS)}, not {tensor.dtype}")
    post = float(postscale_factor) / size if op == "average" else float(postscale_factor)
    return float(prescale_factor), post


def _scale_integers(host, factor):
    """Horovod's integer scaling: the product in double, truncated toward zero."""
    if factor != 1.0:
        with torch.no_grad():
            host.copy_((host.to(torch.float64) * factor).to(host.dtype))


def _allreduce_async_into(tensors, outputs, name, op, prescale_factor, postscale_factor, process_set,
                          who):
    eng = _engine_of(process_set, who)
    if not tensors:
        return [], []
    base = _name("allreduce", name, eng)
    names = [base if len(tensors) == 1 else f"{base}.{index}" for index in range(len(tensors))]
    _reserve(names, who)
    try:
        return _submit_allreduces(eng, tensors, outputs, names, op, prescale_factor, postscale_factor, who)
    except BaseException:
        _release(names)
        raise


def _submit_allreduces(eng, tensors, outputs, names, op, prescale_factor, postscale_factor, who):
    # Every tensor is checked before any is submitted: a refusal covers the whole group on every rank.
    plans = []
    try:
        for tensor in tensors:
            dtype = _dtype(tensor, who)
            plans.append((dtype, _integer_factors(tensor, dtype, op, prescale_factor, postscale_factor, who,
                                                  eng.size)))
    except (TypeError, ValueError) as error:
        _refuse(names, ALLREDUCE, error, eng)
    requests, staged = [], []
    for tensor, output, tensor_name, (dtype, integer) in zip(tensors, outputs, names, plans):
        if output is not tensor:
            with torch.no_grad():
                output.copy_(tensor)
        host = _Staged(output)
        if integer is None:
            reduce_op, prescale, postscale = op, float(prescale_factor), float(postscale_factor)
        else:  # summed by the engine, scaled here as Horovod scales integers
            reduce_op, prescale, postscale = "sum", 1.0, 1.0
            _scale_integers(host.host, integer[0])
            host.after = lambda h=host.host, factor=integer[1]: _scale_integers(h, factor)
        request = eng.submit(tensor_name, ALLREDUCE, None, host.host.data_ptr(), host.host.numel(), dtype,
                             op=reduce_op, prescale=prescale, postscale=postscale, keep=(host.host,),
                             shape=tuple(tensor.shape))
        request.name = tensor_name
        requests.append(request)
        staged.append(host)
    return requests, staged


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=process_sets.global_process_set):
    """Reduces tensor across ranks in place (op Average by default); returns a handle."""
    requests, staged = _allreduce_async_into([tensor], [tensor], name, _ops.resolve(op, average, "allreduce_"),
                                             prescale_factor, postscale_factor, process_set, "allreduce_async_")
    return _register(requests, lambda: staged[0].finish())


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=process_sets.global_process_set):
    """Like allreduce_async_, into a new tensor."""
    output = torch.empty_like(tensor)
    requests, staged = _allreduce_async_into([tensor], [output], name, _ops.resolve(op, average, "allreduce"),
                                             prescale_factor, postscale_factor, process_set, "allreduce_async")
    return _register(requests, lambda: staged[0].finish())


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=process_sets.global_process_set):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set))


def allreduce(tensor, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=process_sets.global_process_set):
    """A new tensor: tensor reduced across ranks (op Average by default). The
    result has tensor's gradient: allreduce is differentiable, as Horovod's is."""
    from .compression import Compression
    compression = compression or Compression.none
    compressed, context = compression.compress(tensor)
    reduced = _AllreduceFunction.apply(compressed, average, name, op, prescale_factor, postscale_factor,
                                       process_set)
    return compression.decompress(reduced, context)


class _AllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.args = (average, op, prescale_factor, postscale_factor, process_set)
        return synchronize(allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor,
                                           process_set))

    @staticmethod
    def backward(ctx, grad):
        average, op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = synchronize(allreduce_async(grad.contiguous(), average, None, op, prescale_factor,
                                              postscale_factor, process_set))
        return (reduced,) + (None,) * 6


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                             process_set=process_sets.global_process_set):
    requests, staged = _allreduce_async_into(list(tensors), list(tensors), name,
                                             _ops.resolve(op, average, "grouped_allreduce_"), prescale_factor,
                                             postscale_factor, process_set, "grouped_allreduce_async_")
    return _register(requests, lambda: [s.finish() for s in staged])


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=process_sets.global_process_set):
    outputs = [torch.empty_like(t) for t in tensors]
    requests, staged = _allreduce_async_into(list(tensors), outputs, name,
                                             _ops.resolve(op, average, "grouped_allreduce"), prescale_factor,
                                             postscale_factor, process_set, "grouped_allreduce_async")
    return _register(requests, lambda: [s.finish() for s in staged])


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=process_sets.global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))


def grouped_allreduce(tensors, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=process_sets.global_process_set):
    """New tensors: each of tensors reduced across ranks, in one group. Differentiable, as Horovod's is:
    the gradients are reduced the same way."""
    from .compression import Compression
    compression = compression or Compression.none
    packed = [compression.compress(t) for t in tensors]
    reduced = _GroupedAllreduceFunction.apply(average, name, op, prescale_factor, postscale_factor, process_set,
                                              *[c for c, _ in packed])
    return [compression.decompress(r, context) for r, (_, context) in zip(reduced, packed)]


class _GroupedAllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = (average, op, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(grouped_allreduce_async(list(tensors), average, name, op, prescale_factor,
                                                         postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        average, op, prescale_factor, postscale_factor, process_set = ctx.args
        reduced = synchronize(grouped_allreduce_async([g.contiguous() for g in grads], average, None, op,
                                                      prescale_factor, postscale_factor, process_set))
        return (None,) * 6 + tuple(reduced)


# ---- allgather, broadcast --------------------------------------------------------------------------------

_NO_ROWS = ctypes.c_int64(0)  # the send address of a rank with nothing to add


def allgather_async(tensor, name=None, process_set=process_sets.global_process_set):
    """Every rank's tensor concatenated along dimension 0 (whose size may
    differ between ranks; the other dimensions must agree)."""
    eng = _engine_of(process_set, "allgather")
    tensor_name = _name("allgather", name, eng)
    _reserve([tensor_name], "allgather_async")
    try:
        return _submit_allgather(eng, tensor, tensor_name)
    except BaseException:
        _release([tensor_name])
        raise


def _submit_allgather(eng, tensor, tensor_name):
    try:
        dtype = _dtype(tensor, "allgather")
        if tensor.dim() == 0:
            raise ValueError("horovod.torch.allgather: the tensor needs at least one dimension (it is a scalar); "
                             "reshape it to [1]")
    except (TypeError, ValueError) as error:
        _refuse([tensor_name], ALLGATHER, error, eng)
    host = _Staged(tensor)
    rows, rest = tensor.shape[0], tuple(tensor.shape[1:])
    row_elements = 1
    for extent in rest:
        row_elements *= extent
    # An empty tensor still needs a real send address: a null one means "in place" to the engine.
    send = host.host.data_ptr() if host.host.numel() else ctypes.addressof(_NO_ROWS)
    request = eng.submit(tensor_name, ALLGATHER, send, None, rows, dtype,
                         row_elements=row_elements, keep=(host.host,), shape=tuple(tensor.shape))
    request.name = tensor_name

    def finish():
        address, total = request.output()
        result = torch.empty((total,) + rest, dtype=tensor.dtype)
        if result.numel():
            ctypes.memmove(result.data_ptr(), address, result.numel() * result.element_size())
        return result.to(tensor.device)
    return _register([request], finish)


def allgather(tensor, name=None, process_set=process_sets.global_process_set):
    return _AllgatherFunction.apply(tensor, name, process_set)


class _AllgatherFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.rows = tensor.shape[0] if tensor.dim() else 1
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        # This rank's rows of the gradient averaged across ranks, as Horovod 0.28's allgather gradient.
        eng = _engine_of(ctx.process_set, "allgather")
        averaged = synchronize(allreduce_async(grad.contiguous(), op=Average, process_set=ctx.process_set))
        counts = eng.gather_ints([ctx.rows], "allgather_backward")
        start = sum(c[0] for c in counts[:eng.rank])
        return averaged[start:start + ctx.rows], None, None


def grouped_allgather(tensors, name=None, process_set=process_sets.global_process_set):
    """allgather of each tensor, in one group; differentiable, as Horovod's is."""
    return list(_GroupedAllgatherFunction.apply(name, process_set, *tensors))


class _GroupedAllgatherFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.rows = [t.shape[0] if t.dim() else 1 for t in tensors]
        ctx.process_set = process_set
        base = _name("grouped_allgather", name, _engine_of(process_set, "grouped_allgather"))
        handles = [allgather_async(t, f"{base}.{i}", process_set) for i, t in enumerate(tensors)]
        return tuple(synchronize(h) for h in handles)

    @staticmethod
    def backward(ctx, *grads):
        # Each tensor's rows of its gradient averaged across ranks, as allgather's own gradient.
        eng = _engine_of(ctx.process_set, "grouped_allgather")
        averaged = synchronize(grouped_allreduce_async([g.contiguous() for g in grads], op=Average,
                                                       process_set=ctx.process_set))
        counts = eng.gather_ints(ctx.rows, "grouped_allgather_backward")
        results = []
        for index, (gradient, rows) in enumerate(zip(averaged, ctx.rows)):
            start = sum(c[index] for c in counts[:eng.rank])
            results.append(gradient[start:start + rows])
        return (None, None) + tuple(results)


def sparse_allreduce_async(tensor, name=None, op=Average, process_set=process_sets.global_process_set):
    """The sum (op Sum) or average (op Average, over the process set's ranks) of a sparse COO tensor
    across ranks, as Horovod computes it: every rank's coordinates and values are gathered, and entries
    at one coordinate stay separate until torch coalesces them. Returns a callable that waits for the
    gathers and gives the sparse result, of tensor's size."""
    eng = _engine_of(process_set, "sparse_allreduce_async")
    reduce_op = _ops.resolve(op, None, "sparse_allreduce_async")
    if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
        raise TypeError("horovod.torch.sparse_allreduce_async: expected a sparse COO tensor")
    if reduce_op not in ("average", "sum"):
        raise ValueError(f"horovod.torch.sparse_allreduce_async: op must be Average or Sum, not {reduce_op}")
    base = _name("sparse_allreduce", name, eng)
    # One row per entry: allgather concatenates rows, so the coordinates travel transposed.
    coordinates = allgather_async(tensor._indices().t().contiguous(), f"{base}.indices", process_set)
    values = allgather_async(tensor._values().contiguous(), f"{base}.values", process_set)

    def result():
        gathered_values = synchronize(values)
        gathered_coordinates = synchronize(coordinates)
        if reduce_op == "average":
            gathered_values = gathered_values / eng.size
        return torch.sparse_coo_tensor(gathered_coordinates.t(), gathered_values, tensor.size(), check_invariants=True)
    return result


def broadcast_async_(tensor, root_rank, name=None, process_set=process_sets.global_process_set):
    """root_rank's tensor copied into tensor on every rank; returns a handle."""
    eng = _engine_of(process_set, "broadcast")
    tensor_name = _name("broadcast", name, eng)
    _reserve([tensor_name], "broadcast_async_")
    try:
        return _submit_broadcast(eng, tensor, root_rank, tensor_name)
    except BaseException:
        _release([tensor_name])
        raise


def _submit_broadcast(eng, tensor, root_rank, tensor_name):
    try:
        dtype = _dtype(tensor, "broadcast_")
        root = _check_root(root_rank, "broadcast_", eng)
    except (TypeError, ValueError) as error:
        _refuse([tensor_name], BROADCAST, error, eng)
    host = _Staged(tensor)
    request = eng.submit(tensor_name, BROADCAST, None, host.host.data_ptr(), host.host.numel(),
                         dtype, root=root, keep=(host.host,), shape=tuple(tensor.shape))
    request.name = tensor_name
    return _register([request], host.finish)


def broadcast_async(tensor, root_rank, name=None, process_set=process_sets.global_process_set):
    return broadcast_async_(tensor.detach().clone(), root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=process_sets.global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


def broadcast(tensor, root_rank, name=None, process_set=process_sets.global_process_set):
    return _BroadcastFunction.apply(tensor, root_rank, name, process_set)


class _BroadcastFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        # The gradient averaged across ranks, on root_rank only (Horovod 0.28's broadcast gradient).
        averaged = synchronize(allreduce_async(grad.contiguous(), op=Average, process_set=ctx.process_set))
        if engine.rank != ctx.root_rank:
            averaged = averaged * 0
        return averaged, None, None, None


def _check_root(root_rank, who, eng=engine):
    """root_rank (a global rank, as Horovod takes it) as a rank of eng's process set."""
    eng.require(who)
    if not _ops.is_rank(root_rank, engine.size):
        raise ValueError(f"horovod.torch.{who}: root_rank={root_rank!r} is not a rank of this job "
                         f"(0..{engine.size - 1})")
    if int(root_rank) not in eng.members:
        raise ValueError(f"horovod.torch.{who}: root_rank={root_rank!r} is not in the process set "
                         f"(ranks {eng.members})")
    return eng.members.index(int(root_rank))


# ---- all-to-all, reduce-scatter (blocking on the communicator) ---------------------------------------------

def _row_elements(tensor):
    count = 1
    for extent in tensor.shape[1:]:
        count *= extent
    return count


def _alltoall(tensor, splits, who, eng=engine):
    """(rows received, in rank order; int32 counts received from each rank). Blocking."""
    dtype = _dtype(tensor, who)
    eng.require(who)
    size = eng.size
    if tensor.dim() == 0:
        raise ValueError(f"horovod.torch.{who}: the tensor needs at least one dimension")
    rows = tensor.shape[0]
    if splits is None:
        if rows % size:
            raise ValueError(f"horovod.torch.{who}: without splits, dimension 0 ({rows}) must be a multiple of "
                             f"the number of ranks ({size})")
        splits = [rows // size] * size
    else:
        splits = [int(s) for s in (splits.tolist() if isinstance(splits, torch.Tensor) else splits)]
        if len(splits) != size or any(s < 0 for s in splits) or sum(splits) != rows:
            raise ValueError(f"horovod.torch.{who}: splits {splits} must hold {size} non-negative counts "
                             f"that sum to dimension 0 ({rows})")
    received = torch.zeros(size, dtype=torch.int64)
    sent = torch.tensor(splits, dtype=torch.int64)
    eng.alltoallv(sent.data_ptr(), [1] * size, received.data_ptr(), [1] * size, "int64")
    per_row = _row_elements(tensor)
    host = _Staged(tensor)
    output = torch.empty((int(received.sum()),) + tuple(tensor.shape[1:]), dtype=tensor.dtype)
    eng.alltoallv(host.host.data_ptr(), [s * per_row for s in splits], output.data_ptr(),
                  [int(r) * per_row for r in received], dtype)
    return output.to(tensor.device), received.to(torch.int32)  # Horovod's dtype for the received splits


def alltoall_async(tensor, splits=None, name=None, process_set=process_sets.global_process_set):
    output, received = _alltoall(tensor, splits, "alltoall_async", _engine_of(process_set, "alltoall"))
    return _register([], (lambda: (output, received)) if splits is not None else (lambda: output))


def alltoall(tensor, splits=None, name=None, process_set=process_sets.global_process_set):
    """Rank r sends splits[j] rows of tensor to rank j (an even split by
    default). Returns the received rows in rank order and, when splits was
    given, how many came from each rank. Differentiable, as in Horovod."""
    output, received = _AlltoallFunction.apply(tensor, splits, _engine_of(process_set, "alltoall"))
    return output if splits is None else (output, received)


class _AlltoallFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, eng):
        output, received = _alltoall(tensor, splits, "alltoall", eng)
        ctx.received, ctx.eng = received, eng
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad, _):
        # The rows go back where they came from: an all-to-all of the gradient with the received splits.
        returned, _ = _alltoall(grad.contiguous(), ctx.received, "alltoall", ctx.eng)
        return returned, None, None


def reducescatter_async(tensor, name=None, op=Average, process_set=process_sets.global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    eng = _engine_of(process_set, "reducescatter")
    reduce_op = _ops.resolve(op, None, "reducescatter")
    if tensor.dim() == 0:
        _refuse([_name("allreduce", None if name is None else f"reducescatter.{name}", eng)], ALLREDUCE,
                ValueError("horovod.torch.reducescatter: the tensor needs at least one dimension"), eng)
    # The allreduce stays in flight until synchronize(), as Horovod's reduce-scatter does.
    reduced = _handles.pop(allreduce_async(tensor, name=None if name is None else f"reducescatter.{name}",
                                           op={"average": Average, "sum": Sum, "min": Min, "max": Max,
                                               "product": Product}[reduce_op],
                                           prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                           process_set=process_set))
    shares = _ops.split_rows(tensor.shape[0], eng.size)
    start = sum(shares[:eng.rank])

    def finish():
        return reduced.finish()[start:start + shares[eng.rank]].clone()
    return _register(reduced.requests, finish)


class _ReducescatterFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.sum = _ops.resolve(op, None, "reducescatter") == "sum"
        ctx.process_set = process_set
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor))

    @staticmethod
    def backward(ctx, grad):
        # Horovod 0.28's reduce-scatter gradient: every rank's gradient gathered, times the ranks for Sum.
        gathered = synchronize(allgather_async(grad.contiguous(), process_set=ctx.process_set))
        size = _engine_of(ctx.process_set, "reducescatter").size
        return (gathered * size if ctx.sum else gathered), None, None, None, None, None


def reducescatter(tensor, name=None, compression=None, op=Average, process_set=process_sets.global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's rows of the reduction across ranks: dimension 0 split as
    evenly as possible, the first ranks one row more."""
    from .compression import Compression
    compression = compression or Compression.none
    compressed, context = compression.compress(tensor)
    result = _ReducescatterFunction.apply(compressed, name, op, process_set, prescale_factor, postscale_factor)
    return compression.decompress(result, context)


def grouped_reducescatter(tensors, name=None, compression=None, op=Average,
                          process_set=process_sets.global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    return [reducescatter(t, None if name is None else f"{name}.{i}", compression, op, process_set,
                          prescale_factor, postscale_factor) for i, t in enumerate(tensors)]


# ---- join, barrier, objects ---------------------------------------------------------------------------------

def barrier(process_set=process_sets.global_process_set):
    _engine_of(process_set, "barrier").barrier()


def join(device=-1):
    """Every rank calls it once it has no more collectives to issue; until
    every rank has, this rank takes part in the others' allreduces with zeros
    (so their averages count it), and their broadcasts and allgathers raise.
    Returns the rank that joined last. device: Horovod's CUDA device for the
    zeros; matex stages tensors in host memory, so it is not needed."""
    last = engine.join()
    # Unnamed calls are numbered per kind on each rank, and a rank that joined early did not count the
    # others' calls meanwhile: the ranks' counts meet at their largest here, so that unnamed calls match
    # again after a join.
    keys = [(0, kind) for kind in _UNNAMED_KINDS]
    with _counter_lock:
        counts = [_counters.get(key, 0) for key in keys]
    everyone = engine.gather_ints(counts, "join.counters")
    with _counter_lock:
        for key, largest in zip(keys, map(max, zip(*everyone))):
            _counters[key] = max(_counters.get(key, 0), largest)
    return last


# The object calls name their tensors (the call's name, else the call's own), as Horovod does, so that
# they match across ranks whose counts of unnamed calls differ (a rank that joined early).
def _broadcast_bytes(payload, root_rank, name, process_set):
    length = torch.tensor([len(payload)], dtype=torch.int64)
    broadcast_(length, root_rank, name=f"{name}.sz", process_set=process_set)
    data = torch.zeros(int(length.item()), dtype=torch.uint8)
    if engine.rank == root_rank:
        data = torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else data
    broadcast_(data, root_rank, name=f"{name}.t", process_set=process_set)
    return data.numpy().tobytes()


def _allgather_bytes(payload, name, process_set):
    data = torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else torch.zeros(0, dtype=torch.uint8)
    lengths = synchronize(allgather_async(torch.tensor([len(payload)], dtype=torch.int64), name=f"{name}.sz",
                                          process_set=process_set))
    everything = synchronize(allgather_async(data, name=f"{name}.t", process_set=process_set)).numpy().tobytes()
    parts, start = [], 0
    for length in lengths.tolist():
        parts.append(everything[start:start + length])
        start += length
    return parts


def broadcast_object(obj, root_rank=0, name=None, process_set=process_sets.global_process_set):
    """root_rank's object (anything picklable), on every rank."""
    _check_root(root_rank, "broadcast_object", _engine_of(process_set, "broadcast_object"))
    return objects.broadcast_object(obj, root_rank, engine.rank, lambda payload, root: _broadcast_bytes(
        payload, root, name or "broadcast_object", process_set))


def allgather_object(obj, name=None, process_set=process_sets.global_process_set):
    """Every rank's object, in rank order."""
    _engine_of(process_set, "allgather_object").require("allgather_object")
    return objects.allgather_object(obj, lambda payload: _allgather_bytes(payload, name or "allgather_object",
                                                                          process_set))
