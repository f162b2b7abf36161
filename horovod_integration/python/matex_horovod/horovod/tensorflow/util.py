"""horovod.tensorflow.util's helpers, which Horovod's TensorFlow tests and
some scripts import."""
import functools

import tensorflow as tf


def _executing_eagerly():
    """Whether TensorFlow runs eagerly here (not while tracing a function or in a TF1 graph)."""
    return tf.executing_eagerly()


def _make_subgraph(f):
    """f compiled as a tf.function."""
    return tf.function(f)


def _cache(f):
    """f with its results remembered per (positional) arguments, which must be hashable."""
    results = {}

    @functools.wraps(f)
    def cached(*args):
        if args not in results:
            results[args] = f(*args)
        return results[args]
    return cached


def vars_to_refs(variables):
    """Variables (nested in lists or tuples) as their hashable references."""
    if isinstance(variables, (list, tuple)):
        return tuple(vars_to_refs(v) for v in variables)
    return variables.ref()


def refs_to_vars(refs):
    """The inverse of vars_to_refs."""
    if isinstance(refs, (list, tuple)):
        return tuple(refs_to_vars(r) for r in refs)
    return refs.deref()
