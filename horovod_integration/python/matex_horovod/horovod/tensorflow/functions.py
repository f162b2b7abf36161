"""Broadcasting variables for horovod.tensorflow: broadcast_variables,
broadcast_global_variables (TF1 graphs), BroadcastGlobalVariablesHook (TF1
MonitoredTrainingSession) and the TF1 DistributedOptimizer."""
import tensorflow as tf

from ..common import process_sets
from ..common import reduce_ops as _ops
from ..common.refusals import refuse
from . import mpi_ops
from .compression import Compression
from .gradients import GradientAverager


def broadcast_variables(variables, root_rank, process_set=process_sets.global_process_set, inplace=False):
    """Assigns root_rank's values to `variables` on every rank. Eager: done
    when it returns; in a graph: returns the op that does it."""
    process_sets.check(process_set, "broadcast_variables")
    assigns = [v.assign(mpi_ops.broadcast(v, root_rank, process_set=process_set)) for v in variables]
    return None if tf.executing_eagerly() else tf.group(*assigns)


def broadcast_global_variables(root_rank):
    """TF1 graphs: the op that broadcasts every global variable from root_rank."""
    if tf.executing_eagerly():
        raise RuntimeError("horovod.tensorflow.broadcast_global_variables() does not work in eager mode; use "
                           "hvd.broadcast_variables(model.variables, root_rank) instead")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """For tf.compat.v1.train.MonitoredTrainingSession: broadcasts every
    global variable from root_rank once the session is created."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.bcast_op = None

    def begin(self):
        if self.bcast_op is None or self.bcast_op.graph is not tf.compat.v1.get_default_graph():
            self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)


class _DistributedV1Optimizer(tf.compat.v1.train.Optimizer):
    """A TF1 optimizer whose compute_gradients() averages across ranks."""

    def __init__(self, optimizer, averager, name, use_locking):
        super().__init__(use_locking=use_locking, name=name or f"Distributed{type(optimizer).__name__}")
        self._optimizer = optimizer
        self._averager = averager

    def compute_gradients(self, *args, **kwargs):
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        grads = self._averager([g for g, _ in pairs])
        return list(zip(grads, [v for _, v in pairs]))

    def apply_gradients(self, *args, **kwargs):
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False, backward_passes_per_step=1,
                         op=_ops.Average, gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=process_sets.global_process_set,
                         scale_local_gradients=True):
    """A TF1 optimizer (tf.compat.v1.train.Optimizer) or a Keras optimizer
    whose gradients are averaged across ranks."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        if backward_passes_per_step != 1:
            refuse("DistributedOptimizer(backward_passes_per_step > 1) for a TF1 optimizer",
                   "accumulate in the graph yourself, or use a Keras optimizer")
        averager = GradientAverager("tensorflow.DistributedOptimizer", compression, sparse_as_dense, op,
                                    gradient_predivide_factor, process_set)
        return _DistributedV1Optimizer(optimizer, averager, name, use_locking)
    from .._keras import create_distributed_optimizer
    return create_distributed_optimizer(optimizer, name, compression, sparse_as_dense, gradient_predivide_factor,
                                        op, backward_passes_per_step, average_aggregated_gradients, process_set)
