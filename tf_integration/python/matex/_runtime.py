"""Loading MPI and the op library, and the process's matex runtime.

Open MPI loads its plugins with dlopen and expects libmpi's symbols to be
global; a Python extension is loaded with local symbols. So libmpi is loaded
first with RTLD_GLOBAL, then TensorFlow loads the op library (which links
libmatexcomm, which links libmpi), and ctypes reaches the op library's
extern "C" functions (runtime.h) to start and stop MPI and the engine.
"""
import atexit
import ctypes
import os
import threading

from . import _libraries

_LIBRARY = _libraries.OPS_LIBRARY
_lock = threading.Lock()
_ops = None        # the TensorFlow module of the op library
_native = None     # ctypes handle on the same library
_started = False


def _load_libmpi():
    return _libraries.load_libmpi("matex")


_library = None    # ctypes handle on libmatexcomm (for settings)


def config(name):
    """The effective value of a MATEX_* setting, from libmatexcomm's table
    (docs/configuration.md): the environment's, validated, or the default."""
    global _library
    with _lock:
        if _library is None:
            _load_libmpi()
            path = _libraries.LIBMATEXCOMM
            _library = ctypes.CDLL(path if os.path.exists(path) else "libmatexcomm.so.0")
            _library.matex_config_get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
            _library.matex_last_error.restype = ctypes.c_char_p
    value = ctypes.c_char_p()
    if _library.matex_config_get(name.encode(), ctypes.byref(value)) != 0:
        raise ValueError("matex: " + _library.matex_last_error().decode(errors="replace"))
    return value.value.decode()


def ops():
    """The op library's TensorFlow module (loads MPI and the library once)."""
    global _ops, _native
    with _lock:
        if _ops is None:
            import tensorflow as tf
            if not os.path.exists(_LIBRARY):
                from . import _build
                why = _build.facts().get("tf_why") or "not built"
                raise ImportError(f"matex: the TensorFlow op library {_LIBRARY} is missing ({why}); reinstall "
                                  "matex with a supported TensorFlow importable (pip install <repository>, "
                                  "MATEX_WITH_TF=1 to make that an error)")
            _load_libmpi()
            _ops = tf.load_op_library(_LIBRARY)
            _native = ctypes.CDLL(_LIBRARY)
            _native.matex_tf_last_error.restype = ctypes.c_char_p
            if hasattr(_native, "matex_tf_xla_lowerings"):
                _native.matex_tf_xla_lowerings()  # their XLA kernels, also when TensorFlow made its own before
        return _ops


def native():
    """ctypes handle on the op library's extern "C" functions (runtime.h)."""
    ops()
    return _native


def _error(what):
    return RuntimeError(f"matex: {what} failed: {_native.matex_tf_last_error().decode(errors='replace')}")


def init():
    """Starts MPI (if needed) and the engine. Idempotent."""
    global _started
    ops()
    with _lock:
        if _started:
            return
        if _native.matex_tf_initialize() != 0:
            raise _error("init")
        _started = True
        atexit.register(shutdown)


def add_process_set(process_set_id, ranks):
    """Collective over `ranks` (sorted global ranks, this rank among them;
    the others do not call it): the ops' process_set_id `process_set_id`
    (> 0) runs over those ranks, on a communicator and engine of their own.
    Every member adds its sets in the same order."""
    ops()
    ranks = [int(r) for r in ranks]
    if _native.matex_tf_add_process_set(int(process_set_id), (ctypes.c_int * len(ranks))(*ranks), len(ranks)) != 0:
        raise _error(f"adding process set {process_set_id} (ranks {ranks})")


def remove_process_set(process_set_id):
    """Collective over the set's ranks: stops its engine and frees its communicator."""
    ops()
    if _native.matex_tf_remove_process_set(int(process_set_id)) != 0:
        raise _error(f"removing process set {process_set_id}")


def shutdown():
    """Collective: stops the engine (pending tensors fail) and finalizes MPI."""
    global _started
    with _lock:
        if not _started:
            return
        _started = False
        if _native.matex_tf_shutdown() != 0:
            raise _error("shutdown")


def abort(code=1):
    """Ends every rank of the job at once (MPI_Abort)."""
    ops()
    _native.matex_tf_abort(int(code))


def is_initialized():
    return _started


def rank():
    """This rank's number. A process that no MPI launcher started (the
    plain script) is rank 0 of 1 without matex.init(), so that a script's
    own `if matex.rank() == 0:` runs there too; a process a launcher started
    must call matex.init() (or run with MATEX_ENABLE=1) first."""
    if not _started and not _launched():
        return 0
    _require_started()
    return _native.matex_tf_rank()


def size():
    """The number of ranks; 1 in a process that no MPI launcher started (see rank)."""
    if not _started and not _launched():
        return 1
    _require_started()
    return _native.matex_tf_size()


def _launched():
    """Whether an MPI launcher started this process (Open MPI, Hydra/MPICH, PMI-2 or PMIx: srun too)."""
    return any(name in os.environ for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"))


def xla_lowers_collectives():
    """True when XLA:CPU can compile matex's ops (the op library was built
    with its XLA lowerings, ops/xla_lowerings.cc) and no GPU is visible (on
    a GPU, XLA places the ops on XLA:GPU, which has no lowering)."""
    import tensorflow as tf
    ops()
    return hasattr(_native, "matex_tf_xla_lowerings") and not tf.config.list_physical_devices("GPU")


def _require_started():
    if not _started:
        raise RuntimeError("matex is not initialized: call matex.init() first, or run with MATEX_ENABLE=1")
