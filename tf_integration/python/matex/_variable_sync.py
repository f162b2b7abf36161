"""Starting every rank from rank 0's variables: before a broadcast, the ranks
check that they hold the same list of variable shapes and dtypes (a script
whose ranks built different models stops with an error naming the first
variable that differs, instead of collectives that never match).
"""
import tensorflow as tf

from . import _collectives, _runtime


def _signature(variable):
    import zlib
    shape = tuple(variable.shape)
    return zlib.crc32(f"{shape}:{tf.as_dtype(variable.dtype).name}".encode()) & 0x7FFFFFFF, shape


def check_same_variables(variables):
    """Raises on every rank, naming a variable, when the ranks hold different
    lists of variable shapes and dtypes (the script built different models):
    a clear error instead of collectives that never match."""
    signatures = [_signature(v) for v in variables]
    difference = _collectives.first_difference_from_rank0([s for s, _ in signatures], tf.int32)
    if difference is not None:
        rank, index, theirs, rank0s = difference
        here = (f"variable #{index} here is '{getattr(variables[index], 'path', variables[index].name)}' "
                f"{signatures[index][1]} {tf.as_dtype(variables[index].dtype).name}"
                if index < len(variables) else f"this rank has only {len(variables)} variables")
        raise ValueError(f"matex: the ranks built different models: rank {rank} has {theirs} variables, rank 0 "
                         f"{rank0s}, and they first differ at variable #{index} (shape or dtype); on rank "
                         f"{_runtime.rank()} {here}. Every rank must run the same script on the same model.")


def broadcast_variables(variables, root_rank=0):
    """Overwrites every variable with root_rank's value (eagerly), after
    checking that every rank holds the same list of variables."""
    if _runtime.size() == 1:
        return
    check_same_variables(variables)
    for v in variables:
        v.assign(_collectives.broadcast(tf.convert_to_tensor(v), root_rank=root_rank))


def sync_before_first_apply(optimizer, trainable_variables):
    """Custom loops: rank 0's values before the first update. Inside a
    tf.function this runs once, eagerly, while the step is traced."""
    if getattr(optimizer, "_matex_synced", False):
        return
    optimizer._matex_synced = True
    variables = list(trainable_variables) if trainable_variables is not None else list(optimizer._trainable_variables)
    with tf.init_scope():
        values = [tf.convert_to_tensor(v) for v in variables]
        if any(tuple(t.shape) != tuple(v.shape) for t, v in zip(values, variables)):
            # Created inside this very trace and not initialized yet: nothing to send. The same on
            # every rank (same model), so no rank waits for a broadcast the others skip.
            import warnings
            warnings.warn("matex: variables created inside the traced step cannot be broadcast before their first "
                          "update; the ranks rely on MATEX_SEED to start alike (build the model before the loop)")
            return
        broadcast_variables(variables)
