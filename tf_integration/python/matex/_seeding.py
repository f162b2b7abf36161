"""Random seeds under MATEX_ENABLE=1: the script's seeding semantics exactly
as plain TensorFlow has them, with every rank drawing alike.

TensorFlow is given no global seed. An op with a seed of its own, or any op
once the script calls tf.random.set_seed or keras.utils.set_random_seed,
gets the seeds plain TensorFlow gives it: the default graph seed with the op
seed, or the op-seed counter of the global seed, whenever the script seeds,
before or after building its datasets and models. Only where plain
TensorFlow would draw a nondeterministic seed (no global seed and no op
seed: an unseeded shuffle, say) does matex hand out seeds of its own, the
same on every rank: MATEX_SEED mixed with a counter of the graph (or of the
eager context) that creates the op, the graph's name and the script's line
that creates it. Such a run is reproducible under matex,
as it is not in plain TensorFlow. Python's and NumPy's generators, which
Keras draws its default seeds from, are seeded with MATEX_SEED on every rank
(a script that seeds them again does so alike on every rank).
"""
import itertools
import random
import re
import threading
import weakref
import zlib

_lock = threading.Lock()
_counters = weakref.WeakKeyDictionary()  # graph -> counter of the seeds handed out in it
_eager = {}                              # the eager context's counter
_MAXINT32 = 2**31 - 1


def _graph_key(graph):
    """A name of the graph that is the same on every rank (no trace ids)."""
    return re.sub(r"[0-9]+", "", getattr(graph, "name", "") or "graph")


def _call_site():
    """file:line of the first caller outside TensorFlow, Keras and matex (the same on every rank)."""
    import sys
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        generated = "__autograph_generated" in frame.f_code.co_filename  # a temporary file, named per process
        if not generated and not module.startswith(("tensorflow", "keras", "tf_keras", "matex", "absl")):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def seed_like_plain_tensorflow(seed):
    import numpy as np
    from tensorflow.python.eager import context
    from tensorflow.python.framework import ops, random_seed

    random.seed(seed)
    np.random.seed(seed)
    original = random_seed.get_seed
    if getattr(original, "_matex_patched", False):
        return

    def get_seed(op_seed):
        seeds = original(op_seed)  # raises, as plain TensorFlow does, under op determinism
        if seeds != (None, None):
            return seeds
        with _lock:
            if context.executing_eagerly():
                counter, key = _eager.setdefault("counter", itertools.count(1)), "eager"
            else:
                graph = ops.get_default_graph()
                counter = _counters.setdefault(graph, itertools.count(1))
                key = _graph_key(graph)
            index = next(counter)
        first = (seed ^ 0x2545F491) % _MAXINT32 or 1
        # The script's line that creates the op tells apart graphs of one name (two ds.map(lambda ...)).
        key = f"{key}@{_call_site()}"
        return first, (zlib.crc32(key.encode()) + index) % _MAXINT32 or 1

    get_seed._matex_patched = True
    random_seed.get_seed = get_seed
