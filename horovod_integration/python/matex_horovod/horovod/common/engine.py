"""libmatexcomm's communicator and engine through its C API (ctypes), for the
front ends whose tensors are plain host buffers (horovod.torch).

One communicator and one engine per process, started by hvd.init(). The
engine matches tensors across ranks by name, fuses small allreduces and runs
them on its own thread (docs/engine.md), which is Horovod's model: a call
returns a request at once, and waiting on it releases the GIL (ctypes does).
All-to-all and the barrier are blocking calls on the
communicator, which is separate from the engine's own: they never wait on
queued engine work, nor it on them.
"""
import atexit
import ctypes
import threading

from .exceptions import HorovodInternalError

ALLREDUCE, BROADCAST, ALLGATHER = 0, 1, 2
INVALID_ARG, UNSUPPORTED = 1, 8  # matex_status_t
OPS = {"sum": 0, "product": 1, "min": 2, "max": 3, "average": 4}
DTYPES = {"int8": 0, "uint8": 1, "int32": 2, "int64": 3, "float16": 4, "bfloat16": 5, "float32": 6,
          "float64": 7, "bool": 8, "int16": 9, "uint16": 10, "uint32": 11, "uint64": 12}
_IN_PLACE = ctypes.c_void_p(1)


class _TensorOp(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("coll", ctypes.c_int), ("sendbuf", ctypes.c_void_p),
                ("recvbuf", ctypes.c_void_p), ("count", ctypes.c_size_t), ("row_elements", ctypes.c_size_t),
                ("dtype", ctypes.c_int), ("op", ctypes.c_int), ("root", ctypes.c_int),
                ("prescale", ctypes.c_double), ("postscale", ctypes.c_double),
                ("callback", ctypes.c_void_p), ("user_data", ctypes.c_void_p)]


class _Shape(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_size_t), ("dims", ctypes.POINTER(ctypes.c_int64))]


class Request:
    """One submitted tensor. wait() blocks (without the GIL) and raises
    HorovodInternalError when the collective failed; the request is freed
    once it has been waited on, or when dropped."""

    def __init__(self, engine, handle, keep):
        self._engine = engine
        self._handle = handle
        self._keep = keep  # buffers the engine reads or writes until completion
        self._status = None

    def done(self):
        if self._status is not None:
            return True
        flag = ctypes.c_int(0)
        status = self._engine.lib.matex_request_test(self._handle, ctypes.byref(flag))
        if flag.value:
            self._finish(status)
        return bool(flag.value)

    def wait(self):
        if self._status is None:
            self._finish(self._engine.lib.matex_request_wait(self._handle))
        if self._status != 0:
            raise HorovodInternalError(f"horovod (served by matex): {self._message}")

    def output(self):
        """An allgather's result: (address, rows), valid while the request lives."""
        data, rows = ctypes.c_void_p(), ctypes.c_size_t()
        self._engine.check(self._engine.lib.matex_request_output(self._handle, ctypes.byref(data),
                                                                 ctypes.byref(rows)), "allgather output")
        return data.value, rows.value

    def _finish(self, status):
        self._status = status
        self._message = self._engine.lib.matex_last_error().decode(errors="replace") if status else ""

    def __del__(self):
        try:
            if self._handle and self._engine.lib is not None:
                self._engine.lib.matex_request_free(ctypes.byref(self._handle))
        except Exception:  # interpreter teardown
            pass


def purpose_name(purpose):
    """horovod.<purpose>: one name per purpose, reused call after call (the
    engine caches agreed names; a name may be submitted again once done)."""
    return f"horovod.{purpose}"


class Engine:
    def __init__(self):
        self.lib = None
        self._comm = ctypes.c_void_p()
        self._engine = ctypes.c_void_p()
        self._lock = threading.Lock()
        self.started = False
        self.finished = False
        self.crashed = False  # an uncaught exception ends this rank without the collective shutdown
        self.rank = 0
        self.size = 1
        self.local_rank = 0
        self.local_size = 1
        self.node_index = 0
        self.node_count = 1
        self.members = None   # the global ranks this engine runs over (a process set's), once started
        self.process_set_id = 0  # the process set it serves (0: the global set)
        self._subsets = []    # engines of process sets made from this one (closed before it)

    def check(self, status, what):
        if status != 0:
            raise HorovodInternalError(f"horovod (served by matex): {what} failed: "
                                       f"{self.lib.matex_last_error().decode(errors='replace')}")

    def check_submission(self, status, what):
        """A refused submission: ValueError for a bad one (a name still in flight, as Horovod raises for
        two operations under one name at once), HorovodInternalError otherwise."""
        if status == INVALID_ARG:
            raise ValueError(f"horovod (served by matex): {what} failed: "
                             f"{self.lib.matex_last_error().decode(errors='replace')}")
        self.check(status, what)

    def start(self):
        with self._lock:
            if self.started:
                return
            if self.finished:
                raise RuntimeError("horovod (served by matex): hvd.init() after hvd.shutdown(): MPI cannot start "
                                   "twice in one process")
            from matex import _libraries
            _libraries.load_libmpi("horovod")
            lib = ctypes.CDLL(_libraries.LIBMATEXCOMM)
            lib.matex_last_error.restype = ctypes.c_char_p
            lib.matex_built_with_cuda.restype = ctypes.c_int
            self.lib = lib
            self.check(lib.matex_init(ctypes.byref(self._comm)), "matex_init")
            facts = {}
            for name in ("rank", "size", "local_rank", "local_size", "node_index", "node_count"):
                value = ctypes.c_int()
                self.check(getattr(lib, "matex_comm_" + name)(self._comm, ctypes.byref(value)), name)
                facts[name] = value.value
            self.__dict__.update(facts)
            self.check(lib.matex_engine_create(self._comm, ctypes.byref(self._engine)), "starting the engine")
            self.members = list(range(self.size))
            self.started = True
            atexit.register(self.shutdown)
            import sys
            if self.size > 1 and not hasattr(sys, "ps1"):  # a job of several ranks, not an interactive session
                _end_job_on_uncaught_exceptions(self)

    def learn_topology(self):
        pass  # start() read it

    @staticmethod
    def conflict():
        return None  # MATEX_ENABLE=1 takes over torch.distributed groups, which horovod.torch does not use

    def subset(self, ranks, process_set_id):
        """An engine over some of this one's ranks (sorted global ranks, this rank among them), on a
        communicator of their own: process set process_set_id's. Collective over those ranks only."""
        child = Engine()
        child.lib = self.lib
        n = len(ranks)
        self.check(self.lib.matex_comm_create_from_ranks(self._comm, (ctypes.c_int * n)(*ranks), n,
                                                         ctypes.byref(child._comm)), f"making process set {ranks}")
        child.rank, child.size, child.members = ranks.index(self.rank), n, list(ranks)
        child.process_set_id = process_set_id
        try:
            child.check(self.lib.matex_engine_create(child._comm, ctypes.byref(child._engine)),
                        f"starting process set {ranks}'s engine")
        except BaseException:
            self.lib.matex_finalize(ctypes.byref(child._comm))
            raise
        child.started = True
        with self._lock:
            self._subsets.append(child)
        child._parent = self
        return child

    def close(self):
        """A process set's engine: stops its engine on all its ranks (the first to close it ends it for
        every member; pending tensors fail) and frees this rank's communicator."""
        with self._lock:
            if not self.started:
                return
            self.started, self.finished = False, True
            self.check(self.lib.matex_engine_destroy(ctypes.byref(self._engine)), "stopping a process set's engine")
            self.check(self.lib.matex_finalize(ctypes.byref(self._comm)), "freeing a process set's communicator")
        parent = getattr(self, "_parent", None)
        if parent is not None:
            with parent._lock:
                if self in parent._subsets:
                    parent._subsets.remove(self)

    def shutdown(self):
        """Stops the engine on every rank (as in Horovod, the first rank to shut down ends it for all;
        pending tensors fail, naming that rank) and finalizes MPI."""
        if not self.started or self.crashed:
            return
        for child in list(self._subsets):  # the process sets still registered, in registration order
            child.close()
        with self._lock:
            if not self.started or self.crashed:
                return
            self.started, self.finished = False, True
            self.check(self.lib.matex_engine_destroy(ctypes.byref(self._engine)), "stopping the engine")
            self.check(self.lib.matex_finalize(ctypes.byref(self._comm)), "matex_finalize")

    def require(self, who):
        if not self.started:
            raise ValueError(f"horovod (served by matex): {who} before hvd.init(); call hvd.init() first")

    def submit(self, name, coll, send, recv, count, dtype, op="sum", root=0, prescale=1.0, postscale=1.0,
               row_elements=0, keep=(), shape=None):
        """Queues one tensor; send/recv are addresses (send None: in place). shape: the tensor's
        dimensions, which the ranks must agree on as on the count (an allgather's past the first)."""
        self.require(name)
        spec = _TensorOp(name.encode(), coll, _IN_PLACE if send is None else send, recv, count, row_elements,
                         DTYPES[dtype], OPS[op], root, prescale, postscale, None, None)
        handle = ctypes.c_void_p()
        if shape is None:
            status = self.lib.matex_engine_submit(self._engine, ctypes.byref(spec), 1, ctypes.byref(handle))
        else:
            dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            described = _Shape(len(shape), dims)
            status = self.lib.matex_engine_submit_shaped(self._engine, ctypes.byref(spec), ctypes.byref(described), 1,
                                                         ctypes.byref(handle))
        self.check_submission(status, f"submitting {name!r}")
        return Request(self, handle, keep)

    def refuse(self, name, coll, reason, status=INVALID_ARG):
        """Hands the engine this rank's refusal of a tensor, in place of its data
        (a check of ours failed): every rank's request for the name then fails
        with the reason, instead of the others waiting for this rank's data.
        Returns the request."""
        self.require(name)
        spec = _TensorOp(name.encode(), coll, None, None, 0, 0, 0, 0, 0, 0.0, 0.0, None, None)
        handle = ctypes.c_void_p()
        self.check(self.lib.matex_engine_submit_refusal(self._engine, ctypes.byref(spec), status,
                                                         reason.encode(errors="replace"), ctypes.byref(handle)),
                   f"refusing {name!r}")
        return Request(self, handle, ())

    def prepare(self, name, dtype, op="sum", prescale=1.0, postscale=1.0):
        """An in-place allreduce's description, made once and submitted many
        times with submit_prepared() (the optimizer's per-gradient path)."""
        return _TensorOp(name.encode(), ALLREDUCE, _IN_PLACE, None, 0, 0, DTYPES[dtype], OPS[op], 0, prescale,
                         postscale, None, None)

    def submit_prepared(self, items):
        """Queues prepared allreduces in one call (all or none): items are
        (spec, address, element count, objects to keep alive). Returns their
        requests."""
        n = len(items)
        if n == 1:
            spec, address, count, keep = items[0]
            spec.recvbuf, spec.count = address, count
            return [self.submit_one(spec, keep)]
        specs = (_TensorOp * n)()
        for i, (spec, address, count, _) in enumerate(items):
            spec.recvbuf, spec.count = address, count
            specs[i] = spec
        handles = (ctypes.c_void_p * n)()
        status = self.lib.matex_engine_submit(self._engine, specs, n, handles)
        if status != 0:
            names = ", ".join(repr(spec.name.decode()) for spec, _, _, _ in items[:3])
            self.check_submission(status, f"submitting {names}{' and others' if n > 3 else ''}")
        return [Request(self, ctypes.c_void_p(handles[i]), items[i][3]) for i in range(n)]

    def submit_one(self, spec, keep):
        """Queues one prepared allreduce whose buffer and count are set: the
        per-gradient path of a backward pass, kept to one foreign call."""
        handle = ctypes.c_void_p()
        status = self.lib.matex_engine_submit(self._engine, ctypes.byref(spec), 1, ctypes.byref(handle))
        if status != 0:
            self.check_submission(status, f"submitting {spec.name.decode()!r}")
        return Request(self, handle, keep)

    def alltoallv(self, send, sendcounts, recv, recvcounts, dtype):
        """Blocking: elements counts per rank, packed in rank order on both sides."""
        self.require("alltoall")
        n = self.size
        sizes = ctypes.c_size_t * n
        self.check(self.lib.matex_alltoallv(self._comm, ctypes.c_void_p(send), sizes(*sendcounts), None,
                                            ctypes.c_void_p(recv), sizes(*recvcounts), None, DTYPES[dtype]),
                   "alltoall")

    def gather_ints(self, values, purpose):
        """Every rank's list of len(values) integers (the same length everywhere), in rank order. The
        tensor is named after the purpose, so that ranks out of step (one in join, another in
        barrier) fail after the stall limit, naming the tensor, instead of matching each other."""
        k = len(values)
        send = (ctypes.c_int64 * k)(*values)
        request = self.submit(purpose_name(purpose), ALLGATHER, ctypes.addressof(send), None, 1, "int64",
                              row_elements=k, keep=(send,))
        request.wait()
        address, rows = request.output()
        flat = (ctypes.c_int64 * (rows * k)).from_address(address)
        return [list(flat[r * k:(r + 1) * k]) for r in range(rows)]

    def join(self):
        """Horovod's join: blocks until every rank has joined, this rank taking part in the others'
        allreduces with zeros meanwhile (their broadcasts and allgathers fail); returns the rank that
        joined last, the same on every rank."""
        self.require("join")
        handle = ctypes.c_void_p()
        self.check_submission(self.lib.matex_engine_submit_join(self._engine, ctypes.byref(handle)), "join")
        request = Request(self, handle, ())
        request.wait()
        address, _ = request.output()
        return ctypes.c_int32.from_address(address).value

    def barrier(self):
        """Returns once every rank of this engine has called it. Through the engine, as Horovod's barrier
        is (not a blocking MPI barrier): a rank that shuts down meanwhile makes it fail, naming that rank,
        instead of leaving the others waiting; while some rank has joined it fails too."""
        self.require("barrier")
        self.gather_ints([self.rank], "barrier")

    def built_with_cuda(self):
        if self.lib is None:
            from matex import _build
            return _build.built_with_cuda()
        return self.lib.matex_built_with_cuda() == 1


def _end_job_on_uncaught_exceptions(engine):
    """An exception that ends the script on one rank ends the job: the rank
    exits at once, without the collective shutdown the others would never
    join, and the MPI launcher then stops every rank (as mpirun does for a
    rank that exits without MPI_Finalize; srun needs --kill-on-bad-exit).
    Else the other ranks would wait for its tensors until the stall limit.
    Python's atexit handlers do not run on that rank."""
    import os
    import sys
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        if kind is KeyboardInterrupt or not engine.started:
            return
        engine.crashed = True
        sys.stderr.write(f"horovod (served by matex): rank {engine.rank} ends the job after an uncaught "
                         f"{kind.__name__}\n")
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:  # a closed or replaced stream
                pass
        os._exit(1)

    sys.excepthook = hook


engine = Engine()
