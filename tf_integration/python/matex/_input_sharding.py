"""How each rank gets its rows of every global batch that fit, evaluate and
predict read, by MATEX_INPUT_SHARDING:

- auto (default): exact input sharding where the pipeline allows it
  (_input_plan.py: the per-row maps run only for this rank's rows), else
  replicate, saying once why, naming the op;
- replicate: every rank runs the whole pipeline and keeps its contiguous
  slice of each global batch (exact, N-fold input work);
- statistical: as auto, but maps that draw random numbers or keep state are
  cut too; their draws then differ from one process's (fast, not exact).
"""
import tensorflow as tf

from . import _input_plan, _runtime, _threads
from ._map_functions import rows_of_rank, share

_said = set()


def slice_bounds(rows):
    """[lo, hi): this rank's contiguous share of a global batch of `rows`."""
    return share(rows, _runtime.rank(), _runtime.size())


def replicated(dataset):
    """Every rank iterates the whole dataset and keeps its slice of each batch."""
    def cut(t):
        return rows_of_rank(t, _runtime.rank(), _runtime.size())

    def take(*batch):
        if len(batch) == 1:
            return tf.nest.map_structure(cut, batch[0])
        return tuple(tf.nest.map_structure(cut, part) for part in batch)

    return dataset.map(take)


def _say_once(message):
    if message in _said or _runtime.rank() != 0:
        return
    _said.add(message)
    import warnings
    warnings.warn(message, stacklevel=3)


def explain(planned, why, in_loop=False):
    """Says once (rank 0) why a pipeline, or its part above `why`'s op, runs on every row."""
    n = _runtime.size()
    if planned is None and why and "nothing to save" not in why:
        fast = "" if in_loop else ", or set MATEX_INPUT_SHARDING=statistical"
        _say_once(f"matex: input pipeline not sharded{' in a custom loop' if in_loop else ''}: {why}; each of the "
                  f"{n} ranks runs it on every row ({n}x input work). Make the map pure (per-row seeds: "
                  f"Dataset.random or enumerate with tf.random.stateless_*){fast} (docs/tensorflow.md)")
    elif planned is not None and why:
        _say_once(f"matex: input pipeline sharded below {why.split(' (before')[0]} only: {why}, so it and "
                  f"what comes before it run on every row on each of the {n} ranks")


def _planned(dataset, statistical):
    cached = getattr(dataset, "_matex_plan", None)  # on the dataset: a cache that holds it would keep it alive
    if cached is not None and cached[0] == statistical:
        return cached[1]
    planned, why = _input_plan.plan(dataset, _runtime.rank(), _runtime.size(), statistical)
    explain(planned, why)
    try:
        dataset._matex_plan = (statistical, planned)
    except AttributeError:
        pass
    return planned


def within_budget(dataset):
    """tf.data's autotuner sized to the rank's CPUs (matex/_threads.py), not the machine's."""
    cpus = _threads.cpus()
    if not cpus or dataset.options().autotune.cpu_budget is not None:
        return dataset  # no budget, or the script's own
    options = tf.data.Options()
    options.autotune.cpu_budget = cpus
    return dataset.with_options(options)


def for_this_rank(dataset):
    """This rank's batches of `dataset` (a dataset of global batches)."""
    mode = _runtime.config("MATEX_INPUT_SHARDING")
    planned = None if mode == "replicate" else _planned(dataset, mode == "statistical")
    return within_budget(planned if planned is not None else replicated(dataset))
