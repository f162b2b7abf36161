"""hvd.DistributedOptimizer for torch: averages gradients across ranks
between loss.backward() and optimizer.step().

A hook on each parameter (register_post_accumulate_grad_hook) submits its
gradient to matex's engine as soon as autograd has accumulated it, named
after the parameter, so communication overlaps the rest of the backward pass
and the engine fuses small gradients. step() waits for them all, then runs
the wrapped optimizer's own step. With backward_passes_per_step=N the
gradient is submitted on the N-th backward pass only (the N passes accumulate
locally in .grad, as in Horovod: the result is the rank-average of the sums).
"""
import warnings
import weakref
from contextlib import contextmanager

import torch

from ..common import process_sets
from ..common import reduce_ops as _ops
from ..common.engine import engine
from . import mpi_ops
from ..common.compression import NoneCompressor
from .compression import Compression

# id(parameter) -> (parameter, the DistributedOptimizer whose hook submits its gradient), both weak
# (a tensor's == is elementwise, so tensors cannot be dictionary keys)
_owners = {}


class _Submitted:
    """A gradient handed straight to the engine: reduced in place."""
    __slots__ = ("request", "tensor")

    def __init__(self, request, tensor):
        self.request, self.tensor = request, tensor

    def result(self):
        self.request.wait()
        return self.tensor


class _SparseResult:
    """A sparse gradient's gathered sum or average (mpi_ops.sparse_allreduce_async): it replaces p.grad."""
    __slots__ = ("wait",)

    def __init__(self, wait):
        self.wait = wait

    def result(self):
        return self.wait()


class _ViaHandle:
    """A gradient submitted through mpi_ops (staged: a CUDA or strided tensor)."""
    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def result(self):
        return mpi_ops.synchronize(self.handle)


class _DistributedMixin:
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, sparse_as_dense, process_set):
        super().__init__(params)
        # The gradients are averaged over process_set; on a rank outside it this optimizer steps alone, as
        # Horovod's does. _engine: the set's engine here, or None when there is nothing to average with.
        self._process_set = process_set
        in_set = process_sets.is_global(process_set) or process_set.included()
        self._engine = mpi_ops._engine_of(process_set, "DistributedOptimizer") if in_set else None
        if self._engine is not None and self._engine.size == 1:
            self._engine = None
        self._compression = compression
        self._op = op
        self._predivide = float(gradient_predivide_factor)
        self._sparse_as_dense = sparse_as_dense
        self.backward_passes_per_step = int(backward_passes_per_step)
        if self.backward_passes_per_step < 1:
            raise ValueError(f"horovod.torch.DistributedOptimizer: backward_passes_per_step must be >= 1, not "
                             f"{backward_passes_per_step}")
        # parameter -> its name, the same on every rank (Horovod's _parameter_names, which its tests read)
        self._parameter_names = self._names = self._name_parameters(named_parameters)
        # Keyed by id(parameter): a tensor's own hash is a Python call, and these run for every gradient.
        self._delay = {id(p): self.backward_passes_per_step for p in self._names}
        self._handles = {}  # id -> None (a pass accumulated locally) or (parameter, pending, tensor, context)
        self._specs = {}  # (id, dtype) -> the parameter's prepared engine submission
        self._lean = {}  # id -> (spec, dtype): uncompressed CPU gradients, submitted by the hook directly
        self._resparsify = set()  # ids of sparse gradients reduced dense (sparse_as_dense) in this step
        self._synchronized = False
        self._should_synchronize = True
        self._hooks = {}
        if self._engine is not None:
            for group in self.param_groups:
                for p in group["params"]:
                    if p.requires_grad:
                        self._take_over(p)

    def _take_over(self, p):
        """Hooks p; a DistributedOptimizer made earlier over p stops hooking
        it (its step() still averages p, submitting it then), so that two
        never submit the same gradient."""
        parameter, owner = _owners.get(id(p), (lambda: None, lambda: None))
        previous = owner() if parameter() is p else None
        if previous is not None and previous is not self:
            handle = previous._hooks.pop(p, None)
            if handle is not None:
                handle.remove()
        self._hooks[p] = p.register_post_accumulate_grad_hook(self._on_gradient)
        _owners[id(p)] = (weakref.ref(p), weakref.ref(self))

    def _name_parameters(self, named_parameters):
        everything = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is None:
            return {p: f"noname.{i}" for i, p in enumerate(everything)}
        named = list(named_parameters)
        if any(not isinstance(item, tuple) or len(item) != 2 for item in named):
            raise ValueError("horovod.torch.DistributedOptimizer: named_parameters must be (name, parameter) "
                             "pairs, as model.named_parameters() gives")
        seen, duplicates = set(), set()
        for name, _ in named:
            (duplicates if name in seen else seen).add(name)
        if duplicates:
            raise ValueError("horovod.torch.DistributedOptimizer: parameter names must be unique; repeated: "
                             + ", ".join(sorted(duplicates)))
        by_id = {id(p): name for name, p in named}
        missing = [i for i, p in enumerate(everything) if id(p) not in by_id]
        if missing:
            raise ValueError("horovod.torch.DistributedOptimizer: named_parameters leaves out parameters of the "
                             f"optimizer (their places in its parameter list: {missing[:10]})")
        return {p: by_id[id(p)] for p in everything}

    def _on_gradient(self, p):
        key = id(p)
        if self._handles.get(key) is not None and self._delay[key] <= 0:
            raise AssertionError("horovod.torch.DistributedOptimizer: gradients were computed more than "
                                 "backward_passes_per_step times before step(); raise backward_passes_per_step to "
                                 "accumulate more passes locally")
        delay = self._delay[key] - 1
        if delay:
            self._delay[key] = delay
            self._handles[key] = None  # accumulated locally; submitted on the last pass
            return
        grad = p.grad
        lean = self._lean.get(key)
        if (lean is not None and grad is not None and grad.dtype is lean[1] and not grad.is_sparse
                and grad.device.type == "cpu" and grad.is_contiguous()):
            # The gradient of a parameter seen before, uncompressed: straight to the engine.
            spec = lean[0]
            spec.recvbuf, spec.count = grad.data_ptr(), grad.numel()
            self._handles[key] = (p, _Submitted(self._engine.submit_one(spec, (grad,)), grad), grad, None)
        else:
            self._handles[key] = (p,) + self._submit_many([p])[0]
        self._delay[key] = 0  # only once submitted: a refused gradient leaves the count as it was

    def _submit_many(self, params):
        """Submits the gradients of params; returns (pending result, the tensor
        reduced, compression context) for each. CPU, contiguous gradients go
        straight to the engine in one call, through descriptions prepared
        once per parameter (this runs for every gradient of every step);
        others (CUDA, strided) through mpi_ops, staged."""
        prescale, postscale = ((1.0 / self._predivide, self._predivide) if self._op == _ops.Average
                               else (1.0, 1.0))
        direct, submitted = [], [None] * len(params)
        for index, p in enumerate(params):
            if p.grad is None:
                # Another rank may have a gradient for it (a branch this rank skipped): take part with zeros.
                p.grad = torch.zeros_like(p)
            if p.grad.is_sparse:
                if not self._sparse_as_dense:  # gathered, as Horovod reduces sparse gradients
                    wait = mpi_ops.sparse_allreduce_async(p.grad, f"grad.{self._names[p]}", self._op,
                                                          self._process_set)
                    submitted[index] = (_SparseResult(wait), p.grad, None)
                    continue
                p.grad = p.grad.to_dense()
                self._resparsify.add(id(p))  # sparse again once reduced, for optimizers that need it
            compressed, context = self._compression.compress(p.grad)
            if compressed.device.type == "cpu" and compressed.is_contiguous():
                key = (id(p), compressed.dtype)
                spec = self._specs.get(key)
                if spec is None:
                    spec = self._engine.prepare(f"allreduce.grad.{self._names[p]}",
                                                mpi_ops._dtype(compressed, "DistributedOptimizer"),
                                                _ops.resolve(self._op), prescale, postscale)
                    self._specs[key] = spec
                    if isinstance(self._compression, type) and issubclass(self._compression, NoneCompressor):
                        self._lean[id(p)] = (spec, compressed.dtype)  # no compression: the hook's lean path
                direct.append((index, spec, compressed, context))
            else:
                handle = mpi_ops.allreduce_async_(compressed, name=f"grad.{self._names[p]}", op=self._op,
                                                  prescale_factor=prescale, postscale_factor=postscale,
                                                  process_set=self._process_set)
                submitted[index] = (_ViaHandle(handle), compressed, context)
        if direct:
            requests = self._engine.submit_prepared([(spec, t.data_ptr(), t.numel(), (t,)) for _, spec, t, _ in direct])
            for (index, _, t, context), request in zip(direct, requests):
                submitted[index] = (_Submitted(request, t), t, context)
        return submitted

    def synchronize(self):
        """Waits for every gradient's allreduce (submitting those whose hook
        has not fired, with zeros where a parameter got no gradient)."""
        if self._engine is not None:
            first_error = None
            try:
                missing = [p for p in self._names if p.requires_grad and self._handles.get(id(p)) is None]
                try:  # their hooks did not fire (no backward, or gradients set by hand): one submission
                    if missing:
                        for p, entry in zip(missing, self._submit_many(missing)):
                            self._handles[id(p)] = (p,) + entry
                except Exception as error:  # still wait for what is in flight, below
                    first_error = error
                for key, entry in self._handles.items():
                    if entry is None:
                        continue
                    p, pending, compressed, context = entry
                    try:  # wait for every one, even after a failure: the engine may still write p.grad
                        output = pending.result()
                    except Exception as error:
                        first_error = first_error or error
                        continue
                    if isinstance(pending, _SparseResult):
                        p.grad = output
                    elif compressed is not p.grad:
                        with torch.no_grad():
                            p.grad.copy_(self._compression.decompress(output, context))
                    if key in self._resparsify:
                        p.grad = p.grad.to_sparse()
            finally:
                for key in self._delay:
                    self._delay[key] = self.backward_passes_per_step
                self._handles.clear()
                self._resparsify.clear()
            if first_error is not None:
                raise first_error
        self._handles.clear()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """For step() right after an explicit synchronize() (gradient clipping between them)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() after "
                              "optimizer.synchronize(): the gradients are averaged twice over the wire "
                              "(same result, twice the traffic)")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("horovod.torch.DistributedOptimizer: zero_grad() between loss.backward() and "
                                 "step() (or synchronize()) would race with the gradients' allreduce")
        return super().zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none, backward_passes_per_step=1,
                         op=_ops.Average, gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=process_sets.global_process_set):
    """An optimizer of optimizer's own class whose step() first averages the
    gradients across ranks. num_groups and groups are accepted: matex's
    engine fuses gradients by size on its own."""
    engine.require("DistributedOptimizer")
    if not process_sets.is_global(process_set) and process_set.process_set_id is None:
        process_sets.check(process_set, "DistributedOptimizer")  # raises: the set is not registered
    _ops.resolve(op, None, "DistributedOptimizer")
    if op != _ops.Average and gradient_predivide_factor != 1.0:
        raise ValueError("horovod.torch.DistributedOptimizer: gradient_predivide_factor needs op=Average")
    if gradient_predivide_factor <= 0:
        raise ValueError("horovod.torch.DistributedOptimizer: gradient_predivide_factor must be > 0")
    if isinstance(optimizer, _DistributedMixin):
        raise ValueError("horovod.torch.DistributedOptimizer: the optimizer is distributed already")
    cls = type(optimizer.__class__.__name__, (_DistributedMixin, optimizer.__class__),
               {"__module__": __name__})
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
               gradient_predivide_factor, sparse_as_dense, process_set)
