"""What MATEX_ENABLE=1 does once the script has imported TensorFlow:

- starts MPI and the engine (matex.init), then binds the rank to its block
  of cores and sizes TensorFlow's thread pools to it (matex/_threads.py);
- keeps the script's seeding as plain TensorFlow has it, with every rank
  drawing alike (matex/_seeding.py);
- keeps XLA on where it can compile the collectives (XLA:CPU), else turns XLA jit off;
- patches Keras 3 (matex/_keras_patches.py): gradients averaged across ranks
  inside optimizer.apply, weighted by local batch size; variables broadcast
  from rank 0 before the first step of fit; every global batch sharded across
  ranks (custom loops too, once their data feeds training); BatchNormalization
  moments and Dropout masks of the global batch; metrics aggregated from their
  summed states; progress output on rank 0 only; and TF1 graphs
  (matex/_tf1_patches.py);
- steps aside, with a warning, when the script already uses Horovod;
- makes an uncaught exception on one rank end the whole job (MPI_Abort)
  instead of leaving the others waiting.

A TensorFlow or Keras release outside the supported range (or a package
installed without the op library) stops the job before anything is patched
(matex/_build.py), and a missing patch target fails loudly with the Keras
version: matex never trains undistributed, or half-patched, by accident.
"""
import sys
import warnings

_active = False


def active():
    return _active


def _refuse_unsupported_versions(tf, op_library):
    import importlib.metadata
    import os

    from . import _build
    hint = "Install a TensorFlow and Keras in the supported ranges, then reinstall matex (pip install <repository>)"
    try:
        _build.check("tf", tf.__version__, os.path.exists(op_library), hint)
        try:
            keras = importlib.metadata.version("keras")
        except importlib.metadata.PackageNotFoundError:
            keras = None
        if keras is not None:
            _build.check("keras", keras, True, hint)
    except _build.UnsupportedVersion as error:
        print(str(error), file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def activate():
    global _active
    if _active:
        return
    import multiprocessing
    if multiprocessing.parent_process() is not None:
        return  # a worker the script started (spawn, forkserver): not an MPI rank
    if "horovod" in sys.modules or "horovod.tensorflow" in sys.modules:
        warnings.warn("matex: the script uses Horovod; MATEX_ENABLE=1 steps aside and does nothing")
        return
    import tensorflow as tf

    from . import _runtime, _threads
    _refuse_unsupported_versions(tf, _runtime._LIBRARY)
    _runtime.init()
    abort_on_uncaught_exceptions()
    _threads.apply(_runtime.native(), _runtime.rank(), _runtime.size())  # before TensorFlow starts its pools
    # Python processes the script starts (data workers) are not ranks: keep the hook out of them.
    import os
    os.environ["MATEX_ENABLE"] = "0"
    from . import _seeding
    _seeding.seed_like_plain_tensorflow(int(_runtime.config("MATEX_SEED")))
    if not _runtime.xla_lowers_collectives():
        tf.config.optimizer.set_jit(False)  # auto-clustering would compile matex's ops where XLA cannot
    from . import _keras_patches, _patching, _tf_keras_patches
    _keras_patches.apply_all()
    _tf_keras_patches.apply_when_imported(_patching.patch)
    from . import _random_patches, _xla_fallback
    _random_patches.apply_all(_patching.patch)
    _xla_fallback.apply_all(_patching.patch)
    log = _runtime.config("MATEX_VERIFY_LOG")
    if log and _runtime.rank() == 0:
        from . import _verify_log
        _verify_log.install(log)  # after the patches: it records what they produce
    _active = True


def abort_on_uncaught_exceptions():
    """An exception that ends the script on one rank ends the job: the other
    ranks would otherwise wait for that rank's tensors forever. Also used by
    the Horovod API (horovod_integration); installed once."""
    previous = sys.excepthook
    if getattr(previous, "_matex_aborts", False):
        return

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        if kind is not KeyboardInterrupt:
            from . import _runtime
            sys.stderr.write(f"matex: rank {_runtime.rank()} ends the job after an uncaught {kind.__name__}\n")
            sys.stderr.flush()
            _runtime.abort(1)

    hook._matex_aborts = True
    sys.excepthook = hook
