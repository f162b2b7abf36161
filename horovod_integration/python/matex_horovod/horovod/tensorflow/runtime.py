"""matex's TensorFlow runtime (the op library's communicator and engine,
matex/_runtime.py) in the shape common/basics.py expects."""
import ctypes


class TensorFlowRuntime:
    def __init__(self):
        self._topology = None

    @property
    def started(self):
        from matex import _runtime
        return _runtime.is_initialized()

    def start(self):
        from matex import _runtime
        _runtime.init()
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
    def gather_ints(values):
        import tensorflow as tf
        from matex import _collectives
        rows = _collectives.allgather(tf.constant([list(values)], tf.int64), name=f"horovod.gather_ints.{len(values)}")
        return rows.numpy().tolist()

    @staticmethod
    def built_with_cuda():
        from matex import _build
        return str(_build.facts().get("cuda", "")).lower() in ("1", "on", "true", "yes")


runtime = TensorFlowRuntime()
