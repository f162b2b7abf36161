"""Per-thread flags that say where the current call runs, set by the patches
and read by the others: "sharding" (inside fit or evaluate, whose batches
are cut across ranks; "sharded_model" is that model) and "reduced" (inside
an optimizer update whose gradients are already reduced)."""
import contextlib
import threading

_state = threading.local()


def flag(name):
    return getattr(_state, name, None)


@contextlib.contextmanager
def setting(name, value):
    old = flag(name)
    setattr(_state, name, value)
    try:
        yield
    finally:
        setattr(_state, name, old)


def while_set(name):
    """A make() for _patching.patch: the original runs with flag `name` set."""
    def make(original):
        def call(*args, **kwargs):
            with setting(name, True):
                return original(*args, **kwargs)
        return call
    return make
