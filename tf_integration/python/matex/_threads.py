"""CPU threads per rank under MATEX_ENABLE=1 (MATEX_THREADS, docs/tensorflow.md).

Ranks on one host that see the same CPUs (unbound, oversubscribed, or bound
to a socket they share) would each size TensorFlow's pools for all of them
and fight over the cores. At activation, before TensorFlow starts its
runtime, libmatexcomm splits the ranks' overlapping affinities into disjoint
blocks of whole cores (matex_thread_budget, one exchange of affinities), and
this module binds every thread of the process to its block (never a CPU the
launcher did not give it), sizes TensorFlow's intra-op and inter-op pools to
it, and hands the block's CPU count to the tf.data pipelines matex builds.
Rank 0 prints every rank's budget once. What the script or the environment
set (TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS, tf.config.threading
before activation) wins.

env_defaults() runs from the startup hook, before NumPy loads: it gives
OMP_NUM_THREADS and the BLAS libraries' thread counts a default of the
rank's share of its CPUs, unless they are set.
"""
import ctypes
import os
import sys

_TABLE_BYTES = 1 << 16
_BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE")

_applied = {}  # what apply() set: "cpus" (CPU count of the block)


class Budget(ctypes.Structure):
    """matex_thread_budget_t (matexcomm.h)."""
    _fields_ = [("cores", ctypes.c_int), ("cpu_count", ctypes.c_int), ("intra_op_threads", ctypes.c_int),
                ("inter_op_threads", ctypes.c_int), ("narrowed", ctypes.c_int), ("shared", ctypes.c_int),
                ("starved", ctypes.c_int)]


def _local_size():
    for name in _LOCAL_SIZE_VARIABLES:
        value = os.environ.get(name, "").split("(")[0]  # SLURM: "2(x3)"
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def env_defaults():
    """OMP_NUM_THREADS and the BLAS thread counts, unless set: the rank's share
    of the CPUs it may run on (its whole affinity when the launcher bound it
    to its own share already)."""
    setting = os.environ.get("MATEX_THREADS", "auto").strip()
    if setting == "off":
        return
    try:
        mine = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return
    if setting.isdigit() and int(setting) > 0:
        threads = min(int(setting), mine)
    else:
        local = _local_size()
        threads = mine if mine * local <= (os.cpu_count() or mine) else max(1, mine // local)
    for name in _BLAS_VARIABLES:
        os.environ.setdefault(name, str(threads))


def _bind_every_thread(cpus):
    """The process's threads (the engine's and MPI's included) and those it starts later."""
    os.sched_setaffinity(0, cpus)
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except OSError:
            pass  # a thread that ended meanwhile


def _size_tensorflow_pools(budget):
    import tensorflow as tf
    from tensorflow.python.eager import context
    if getattr(context.context(), "_initialized", False):
        return "TensorFlow had started its runtime before activation; its pools keep their sizes"
    threading = tf.config.threading
    if "TF_NUM_INTRAOP_THREADS" not in os.environ and threading.get_intra_op_parallelism_threads() == 0:
        threading.set_intra_op_parallelism_threads(budget.intra_op_threads)
    if "TF_NUM_INTEROP_THREADS" not in os.environ and threading.get_inter_op_parallelism_threads() == 0:
        threading.set_inter_op_parallelism_threads(budget.inter_op_threads)
    return None


def apply(native, rank, size):
    """Collective: takes this rank's budget, binds and sizes to it, and prints
    the table on rank 0 (when the job has several ranks)."""
    budget, table = Budget(), ctypes.create_string_buffer(_TABLE_BYTES)
    capacity = max(os.cpu_count() or 1, max(os.sched_getaffinity(0)) + 1)  # room for any CPU index it may get
    cpus = (ctypes.c_int * capacity)()
    native.matex_tf_thread_budget.argtypes = [ctypes.POINTER(Budget), ctypes.POINTER(ctypes.c_int), ctypes.c_size_t,
                                              ctypes.c_char_p, ctypes.c_size_t]
    if native.matex_tf_thread_budget(ctypes.byref(budget), cpus, capacity, table, _TABLE_BYTES) != 0:
        raise RuntimeError("matex: the thread budget failed: " + native.matex_tf_last_error().decode(errors="replace"))
    problem = None
    if budget.intra_op_threads > 0:  # MATEX_THREADS=off gives 0: nothing to apply
        if budget.narrowed:
            _bind_every_thread(set(cpus[:budget.cpu_count]))
        problem = _size_tensorflow_pools(budget)
        _applied["cpus"] = budget.cpu_count
    if rank == 0 and size > 1:
        text = table.value.decode(errors="replace")
        sys.stderr.write("matex: " + text + (f"matex: {problem}\n" if problem else ""))
        sys.stderr.flush()


def cpus():
    """The CPU count of this rank's block, or None when no budget was applied."""
    return _applied.get("cpus")
