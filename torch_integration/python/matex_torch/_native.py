"""Loading the extension. torch goes first: it brings its own NCCL under the
soname of the system's, and whichever loads first wins (libmatexcomm's GPU
path takes what torch loaded). libmpi goes in with global symbols, or Open
MPI's plugins cannot find them (matex/_libraries.py, shared with the
TensorFlow binding; the extension finds libmatexcomm in matex/lib)."""
import atexit
import sys
import threading

from matex import _libraries

_lock = threading.Lock()
_module = None


def _abort_on_uncaught_exception(module):
    """A rank that dies of an exception would leave the others waiting in
    their next collective (and its own exit would wait in MPI's shutdown):
    after printing the traceback, end the whole job, as matex's TF side does."""
    def hook(kind, value, tb):
        # Straight to the process's stderr: a hook installed later (torch's
        # adds a rank prefix) may be buffering sys.stderr, and MPI_Abort
        # would lose what it holds.
        import os
        import traceback
        rank = os.environ.get("RANK", "?")
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.__stderr__.write("".join(f"[rank {rank}] {line}\n" for line in text.splitlines()))
        sys.__stderr__.write(f"[rank {rank}] matex: uncaught exception; ending the job so that the other ranks "
                             "do not wait for this one\n")
        sys.__stderr__.flush()
        module.abort_job(1)

    sys.excepthook = hook


def extension():
    """The _matex_torch module, loaded once."""
    global _module
    with _lock:
        if _module is None:
            import torch  # noqa: F401  (first: its NCCL, its c10d types)
            import torch.distributed  # noqa: F401
            _libraries.load_libmpi("matex_torch")
            try:
                from . import _matex_torch
            except ImportError as error:
                from matex import _build
                why = _build.facts().get("torch_why") or str(error)
                raise ImportError(f"matex_torch: the PyTorch binding is not usable here ({why}); reinstall matex "
                                  "with a supported torch importable (pip install <repository>; MATEX_WITH_TORCH=1 "
                                  "makes a skipped binding an error)") from error
            _module = _matex_torch
            # Every group closes, then MPI, before the interpreter tears down.
            atexit.register(_matex_torch.shutdown)
            _abort_on_uncaught_exception(_matex_torch)
    return _module
