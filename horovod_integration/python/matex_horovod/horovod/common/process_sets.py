"""Process sets: groups of ranks whose collectives run among themselves, each
set on its own communicator and engine (made by the front end's runtime:
runtime.subset(ranks), collective over the set's ranks).

Horovod's rules hold: every rank registers the same sets in the same order
(hvd.init(process_sets=[...]) and add_process_set, which every rank calls),
so that a set has the same id everywhere; collectives take global ranks
(a broadcast's root_rank); and only a set's members call its collectives.
A front end whose runtime has no subset() serves the global set only."""
import threading

from .refusals import refuse

_lock = threading.Lock()
_runtime = None   # the front end's runtime, once started
_sets = {}        # process_set_id -> ProcessSet, registered and not removed
_next_id = [1]    # ids are handed out in registration order, the same on every rank


class ProcessSet:
    """A group of ranks (global ranks, kept sorted). process_set_id is set
    once the set is registered (hvd.init(process_sets=...) or
    add_process_set) and cleared when it is removed."""
    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            refuse("ProcessSet(<MPI communicator>)", "build the process set from a list of ranks")
        if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise ValueError(f"ProcessSet: ranks must be integers, not {list(ranks_or_comm)!r}")
        self.ranks = ranks
        self._engine = None  # this rank's engine for the set, where it is a member

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """The number of ranks in the set, or None before it is registered."""
        return None if self.process_set_id is None else len(self.ranks)

    def rank(self):
        """This rank's place in the set (None before registration or outside the set)."""
        if self.process_set_id is None or not self.included():
            return None
        return self.ranks.index(_runtime.rank)

    def included(self):
        """Whether this rank is in the set (None while the ranks are unknown)."""
        if self.ranks is None or _runtime is None:
            return None
        return _runtime.rank in self.ranks

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"

    __str__ = __repr__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def start(runtime, initial):
    """Called by hvd.init() once the runtime runs: the global set's ranks, and
    the static sets of hvd.init(process_sets=[...]) ("dynamic" or None: none)."""
    global _runtime
    _runtime = runtime
    global_process_set.ranks = list(range(runtime.size))
    if initial is None or isinstance(initial, str):
        return
    for process_set in initial:
        if isinstance(process_set, ProcessSet) and process_set.process_set_id is not None:
            continue  # hvd.init() again with the same sets
        _register(process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set), "init")


def stop():
    """Forgets every set (their engines are closed by the runtime's shutdown)."""
    with _lock:
        for process_set in _sets.values():
            process_set._engine = None
            process_set._invalidate()
        _sets.clear()


def _register(process_set, who):
    if _runtime is None or not _runtime.started:
        raise ValueError(f"horovod (served by matex): {who} before hvd.init(); call hvd.init() first")
    if not hasattr(_runtime, "subset"):
        refuse(f"{who} with a process set other than the global one",
               "this front end serves the global process set only (horovod.torch serves process sets)")
    ranks = process_set.ranks
    outside = [r for r in ranks if not 0 <= r < _runtime.size]
    if outside or not ranks or len(set(ranks)) != len(ranks):
        raise ValueError(f"horovod (served by matex): {who}: process set ranks {ranks} must be distinct ranks of "
                         f"this job (0..{_runtime.size - 1})" + (f"; {outside} are not" if outside else ""))
    with _lock:
        taken = [s for s in _sets.values() if s.ranks == ranks] or (
            [global_process_set] if ranks == global_process_set.ranks else [])
        if taken or process_set.process_set_id is not None:
            raise ValueError(f"horovod (served by matex): attempted to add a duplicate process set: ranks {ranks} "
                             f"are {taken[0] if taken else process_set} already")
        process_set_id = _next_id[0]
        _next_id[0] += 1
    # Collective over the set's members (the others do not take part), in registration order everywhere.
    engine = _runtime.subset(ranks, process_set_id) if _runtime.rank in ranks else None
    with _lock:
        process_set._engine = engine
        process_set.process_set_id = process_set_id
        _sets[process_set_id] = process_set
    return process_set


def add_process_set(process_set):
    """Registers a set after hvd.init() and returns it; every rank calls it, in the same order."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    return _register(process_set, "add_process_set")


def remove_process_set(process_set):
    """Unregisters a set (every rank calls it); False for the global set or one not registered."""
    process_set_id = getattr(process_set, "process_set_id", None)
    if not process_set_id:
        return False
    with _lock:
        if _sets.get(process_set_id) is not process_set:
            return False
        del _sets[process_set_id]
        engine, process_set._engine = process_set._engine, None
        process_set._invalidate()
    if engine is not None:
        engine.close()  # collective over the set's members
    return True


def registered(process_set_id):
    """The registered set of that id, or None."""
    with _lock:
        return _sets.get(process_set_id)


def is_global(process_set):
    return process_set is None or process_set is global_process_set or process_set.process_set_id == 0


def check(process_set, who):
    """The engine that runs a collective of process_set on this rank: None for
    the global set (the front end's own), else the set's; a ValueError for a
    set that is not registered or does not include this rank."""
    if is_global(process_set):
        return None
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"horovod (served by matex): {who}: process_set must be a ProcessSet, "
                         f"not {type(process_set).__name__}")
    if process_set.process_set_id is None or _sets.get(process_set.process_set_id) is not process_set:
        if not hasattr(_runtime, "subset"):
            refuse(f"{who}(process_set=...)", "this front end serves the global process set only")
        raise ValueError(f"horovod (served by matex): {who}: {process_set} is not registered (add_process_set, "
                         "or hvd.init(process_sets=[...]))")
    if process_set._engine is None:
        raise ValueError(f"horovod (served by matex): {who}: rank {_runtime.rank} is not in {process_set}")
    return process_set._engine
