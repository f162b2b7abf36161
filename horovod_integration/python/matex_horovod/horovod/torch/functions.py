"""broadcast_parameters and broadcast_optimizer_state for torch: rank
root_rank's model and optimizer, copied in place into every rank's."""
import torch

from . import mpi_ops


def _named(params):
    if isinstance(params, dict):
        return sorted(params.items())
    if isinstance(params, (list, tuple)) or hasattr(params, "__iter__"):
        return [item if isinstance(item, tuple) else (None, item) for item in params]
    raise ValueError(f"horovod.torch.broadcast_parameters: params must be a state_dict or an iterable of "
                     f"(name, tensor) pairs, not {type(params).__name__}")


def broadcast_parameters(params, root_rank, prefix=None):
    """Copies root_rank's tensors into every rank's: `params` is a
    model.state_dict() or model.named_parameters() (or a list of tensors)."""
    handles = []
    for name, tensor in _named(params):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"horovod.torch.broadcast_parameters: {name!r} is not a tensor")
        key = None if name is None else f"{prefix or ''}{name}"
        handles.append(mpi_ops.broadcast_async_(tensor.data if tensor.requires_grad else tensor, root_rank,
                                                name=None if key is None else f"parameter.{key}"))
    for handle in handles:
        mpi_ops.synchronize(handle)


def _initialize_state(optimizer):
    """Creates a fresh optimizer's state (one step on zero gradients, as
    Horovod does) without changing the parameters: they are restored. The
    zero gradients stay, as in Horovod."""
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    saved = [(p, p.detach().clone()) for p in params]
    for p in params:
        p.grad = torch.zeros_like(p)
        if isinstance(optimizer, torch.optim.SparseAdam):
            p.grad = p.grad.to_sparse()
    from .optimizer import _DistributedMixin
    step = super(_DistributedMixin, optimizer).step if isinstance(optimizer, _DistributedMixin) else optimizer.step
    step()
    with torch.no_grad():
        for p, value in saved:
            p.copy_(value)


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """Copies root_rank's optimizer state (moments, step counts, and the
    hyperparameters of every parameter group) into every rank's optimizer."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("horovod.torch.broadcast_optimizer_state: torch.optim.LBFGS keeps state that cannot be "
                         "broadcast")
    if not optimizer.state_dict()["state"]:
        _initialize_state(optimizer)
    state = optimizer.state_dict()
    # Structure and plain values from the root; every tensor broadcast in place, under its place's name.
    skeleton = {"param_groups": state["param_groups"],
                "state": {pid: {key: (None if isinstance(v, torch.Tensor) else v) for key, v in slots.items()}
                          for pid, slots in state["state"].items()}}
    root = mpi_ops.broadcast_object(skeleton, root_rank)
    if sorted(root["state"]) != sorted(state["state"]):
        raise ValueError("horovod.torch.broadcast_optimizer_state: this rank's optimizer has state for "
                         f"{len(state['state'])} parameters, rank {root_rank}'s for {len(root['state'])}: the "
                         "optimizers differ")
    handles = []
    for pid in sorted(state["state"]):
        for key in sorted(state["state"][pid]):
            value = state["state"][pid][key]
            if isinstance(value, torch.Tensor):
                handles.append(mpi_ops.broadcast_async_(value, root_rank, name=f"optimizer.{pid}.{key}"))
            else:
                state["state"][pid][key] = root["state"][pid][key]
    for handle in handles:
        mpi_ops.synchronize(handle)
    state["param_groups"] = root["param_groups"]
    optimizer.load_state_dict(state)
