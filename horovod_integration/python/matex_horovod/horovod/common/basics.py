"""init, shutdown and the job's shape (rank, size, local and cross ranks),
shared by the front ends. Each front end hands in its runtime: an object with
start(), shutdown(), started, conflict() (why this job cannot start, or
None), learn_topology() (callable once started, by
whoever started it), the topology (rank, size, local_rank, local_size,
node_index) and gather_ints(values, purpose) -> every rank's values.

Horovod's cross communicator joins the ranks of one local rank across nodes:
cross_size is the number of nodes that have a rank with this local rank, and
cross_rank this node's place among them (nodes in matex's order).
"""
import os

from . import process_sets as _process_sets
from . import settings
from .refusals import refuse


class Basics:
    def __init__(self, runtime, framework):
        self._runtime = runtime
        self._framework = framework
        self._cross = None  # (cross_rank, cross_size, homogeneous), once known

    def init(self, comm=None, process_sets=None):
        """Starts MPI and matex's engine (collective; idempotent). Horovod's
        `comm` may be None or the list of every rank (a sub-communicator is
        refused); process_sets: the static sets, registered in order on every
        rank, or "dynamic"."""
        if comm is not None and not _is_world(comm):
            refuse("init(comm=...) with a sub-communicator", "matex runs over all ranks of the job")
        self._comm = comm
        static_sets = process_sets
        conflict = self._runtime.conflict()
        if conflict:
            raise RuntimeError(f"horovod (served by matex): {conflict}")
        if not self._runtime.started:
            settings.apply()
            self._runtime.start()
        if isinstance(self._comm, (list, tuple)) and sorted(self._comm) != list(range(self._runtime.size)):
            refuse(f"init(comm={list(self._comm)}) with ranks other than all {self._runtime.size} of the job",
                   "matex runs over all ranks of the job")
        if static_sets is not None or _process_sets.global_process_set.ranks != list(range(self._runtime.size)):
            _process_sets.start(self._runtime, static_sets)
        # matex may have started already (matex.init(), or MATEX_ENABLE=1): the layout is learnt once either way.
        if self._cross is not None:
            return
        self._runtime.learn_topology()
        shape = self._runtime.gather_ints([self._runtime.node_index, self._runtime.local_rank,
                                           self._runtime.local_size], "layout")
        mine_node, mine_local = self._runtime.node_index, self._runtime.local_rank
        nodes = sorted({node for node, local, _ in shape if local == mine_local})
        homogeneous = len({local_size for _, _, local_size in shape}) == 1
        self._cross = (nodes.index(mine_node), len(nodes), homogeneous)

    def shutdown(self):
        self._runtime.shutdown()
        _process_sets.stop()

    def is_initialized(self):
        return bool(self._runtime.started)

    def _require(self, who):
        if not self._runtime.started:
            raise ValueError(f"Horovod has not been initialized; use hvd.init() (served by matex; {who})")

    def size(self):
        self._require("size")
        return self._runtime.size

    def rank(self):
        self._require("rank")
        return self._runtime.rank

    def local_size(self):
        self._require("local_size")
        return self._runtime.local_size

    def local_rank(self):
        self._require("local_rank")
        return self._runtime.local_rank

    def cross_size(self):
        self._require("cross_size")
        return self._cross[1]

    def cross_rank(self):
        self._require("cross_rank")
        return self._cross[0]

    def is_homogeneous(self):
        self._require("is_homogeneous")
        return self._cross[2]

    @staticmethod
    def mpi_threads_supported():
        return True  # matex's engine runs under MPI_THREAD_MULTIPLE

    @staticmethod
    def mpi_built(verbose=False):
        return True

    @staticmethod
    def mpi_enabled():
        return True

    @staticmethod
    def gloo_built(verbose=False):
        return False

    @staticmethod
    def gloo_enabled():
        return False

    def nccl_built(self, verbose=False):
        """As Horovod: NCCL's version code (e.g. 22703) when built with it, else 0. matex's GPU path loads
        NCCL at run time; built with CUDA and no NCCL found, it answers 1 (built, version unknown)."""
        if not self._runtime.built_with_cuda():
            return 0
        from matex import _libraries
        return _libraries.nccl_version() or 1

    def cuda_built(self, verbose=False):
        return bool(self._runtime.built_with_cuda())

    @staticmethod
    def rocm_built(verbose=False):
        return False

    @staticmethod
    def ddl_built(verbose=False):
        return False

    @staticmethod
    def ccl_built(verbose=False):
        return False

    @staticmethod
    def start_timeline(file_path, mark_cycles=False):
        refuse("start_timeline", "matex writes its timeline from the start of the job: set HOROVOD_TIMELINE "
               "(or MATEX_TIMELINE) before hvd.init()")

    @staticmethod
    def stop_timeline():
        refuse("stop_timeline", "matex's timeline runs for the whole job (HOROVOD_TIMELINE or MATEX_TIMELINE)")

    def exported(self):
        """The functions a front end's module exports under Horovod's names."""
        names = ("init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
                 "cross_rank", "is_homogeneous", "mpi_threads_supported", "mpi_built", "mpi_enabled",
                 "gloo_built", "gloo_enabled", "nccl_built", "cuda_built", "rocm_built", "ddl_built", "ccl_built",
                 "start_timeline", "stop_timeline")
        table = {name: getattr(self, name) for name in names}
        table.update(ProcessSet=_process_sets.ProcessSet, global_process_set=_process_sets.global_process_set,
                     add_process_set=_process_sets.add_process_set,
                     remove_process_set=_process_sets.remove_process_set)
        return table


def _is_world(comm):
    """Horovod accepts a list of ranks (all of them) or an mpi4py communicator."""
    if isinstance(comm, (list, tuple)):
        size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("PMI_SIZE", len(comm))))
        return sorted(comm) == list(range(size))
    try:
        from mpi4py import MPI
        return comm == MPI.COMM_WORLD or MPI.Comm.Compare(comm, MPI.COMM_WORLD) in (MPI.IDENT, MPI.CONGRUENT)
    except ImportError:
        return False
