"""matex's TensorFlow runtime (the op library's communicator and engine,
matex/_runtime.py) in the shape common/basics.py expects."""
import ctypes
import sys


class TensorFlowRuntime:
    def __init__(self):
        self._topology = None

    @property
    def started(self):
        from matex import _runtime
        return _runtime.is_initialized()

    def start(self):
        """Starts matex's TensorFlow runtime, as MATEX_ENABLE's activation
        would, without its patches of the script: an uncaught exception on a
        rank ends the job (in a job of several ranks, not in an interactive
        session), and a tf.function or Keras step compiled with XLA where XLA
        cannot lower matex's ops (a GPU) runs without XLA, with a warning,
        instead of failing."""
        import tensorflow as tf
        from keras.src.trainers import trainer as base_trainer
        from matex import _activation, _keras_patches, _patching, _runtime, _xla_fallback
        _runtime.init()
        if _runtime.size() > 1 and not hasattr(sys, "ps1"):
            _activation.abort_on_uncaught_exceptions()
        if not _runtime.xla_lowers_collectives():
            tf.config.optimizer.set_jit(False)
        _xla_fallback.apply_all(_patching.patch)
        # Keras compiles its step with XLA inside a plain tf.function on a GPU (jit_compile="auto"), where
        # the fallback above cannot catch it: compile() turns XLA off there, as under MATEX_ENABLE=1.
        _patching.patch(base_trainer.Trainer, "compile", _keras_patches._make_compile)

    @staticmethod
    def conflict():
        from matex import _activation
        if _activation.active():
            return ("MATEX_ENABLE=1 has already made this TensorFlow script data-parallel (it shards the "
                    "input and averages the gradients itself), and a Horovod script does both again: unset "
                    "MATEX_ENABLE and keep MATEX_HOROVOD=1")
        return None

    def learn_topology(self):
        from matex import _runtime
        native = _runtime.native()
        values = [ctypes.c_int() for _ in range(4)]
        if native.matex_tf_topology(*[ctypes.byref(v) for v in values]) != 0:
            raise RuntimeError(f"horovod (served by matex): {native.matex_tf_last_error().decode(errors='replace')}")
        self._topology = [v.value for v in values]

    def shutdown(self):
        from matex import _runtime
        _runtime.shutdown()

    @property
    def rank(self):
        from matex import _runtime
        return _runtime.rank()

    @property
    def size(self):
        from matex import _runtime
        return _runtime.size()

    local_rank = property(lambda self: self._topology[0])
    local_size = property(lambda self: self._topology[1])
    node_index = property(lambda self: self._topology[2])

    @staticmethod
    def join():
        """Horovod's join on the op library's engine (blocking); returns the rank that joined last."""
        from matex import _runtime
        native = _runtime.native()
        last = ctypes.c_int(-1)
        if native.matex_tf_join(ctypes.byref(last)) != 0:
            raise RuntimeError(f"horovod (served by matex): {native.matex_tf_last_error().decode(errors='replace')}")
        return last.value

    def subset(self, ranks, process_set_id):
        """Process set process_set_id's ops run over `ranks` (sorted global
        ranks, this rank among them) on a communicator and engine of their
        own, in the op library. Collective over those ranks only."""
        from matex import _runtime
        _runtime.add_process_set(process_set_id, ranks)
        return _ProcessSetOps(process_set_id, list(ranks), list(ranks).index(self.rank))

    @staticmethod
    def gather_ints(values, purpose):
        """Every rank's values, in rank order (named as common/engine.py's gather_ints names them)."""
        import tensorflow as tf
        from matex import _collectives

        from ..common.engine import purpose_name
        with TensorFlowRuntime.eager_mode():  # also when a TF1-style graph is the default
            rows = _collectives.allgather(tf.constant([list(values)], tf.int64), name=purpose_name(purpose))
            return rows.numpy().tolist()

    @staticmethod
    def eager_mode():
        """A context in which TensorFlow runs ops eagerly, whatever graph is the default."""
        from tensorflow.python.eager import context
        return context.eager_mode()

    @staticmethod
    def built_with_cuda():
        from matex import _build
        return _build.built_with_cuda()


class _ProcessSetOps:
    """What a process set is on one of its ranks in TF: the ops' process_set_id, its ranks, this rank's place."""

    def __init__(self, process_set_id, members, rank):
        self.process_set_id, self.members, self.rank, self.size = process_set_id, members, rank, len(members)

    def close(self):
        """Collective over the set's ranks: its engine stops and its communicator is freed."""
        from matex import _runtime
        _runtime.remove_process_set(self.process_set_id)


runtime = TensorFlowRuntime()
