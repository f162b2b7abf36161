"""Horovod's elastic state objects and hvd.elastic.run, on a job of fixed size.

matex jobs are MPI jobs: their ranks are fixed when mpirun (or srun) starts
them, and a rank that is lost ends the whole job. What Horovod's elastic
scripts need from this module still holds there, and it is served so that
they run unchanged on a fixed allocation:

- a State keeps a copy of what it tracks in host memory: save() (and
  commit(), which saves) takes the copy, restore() puts it back, sync()
  makes every rank hold rank 0's and saves it;
- run(func) syncs the state and calls func(state) once.

What is not served is the elastic part itself: no hosts are ever added or
removed, so check_host_updates() never interrupts and reset callbacks never
run, and an error in func (a lost rank's HorovodInternalError included) ends
the job instead of restoring and retrying. horovodrun's --min-np, --max-np
and --host-discovery-script stay refused.
"""
import functools


class State:
    """What an elastic script keeps across its steps. broadcast_object(obj)
    gives rank 0's obj on every rank."""

    def __init__(self, broadcast_object, get_rank):
        self._broadcast_object = broadcast_object
        self._get_rank = get_rank
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Kept for Horovod's scripts; a fixed-size job never resets, so they are never called."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Saves the state (the point restore() returns to) and checks for host changes."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Hosts never change in a fixed-size MPI job: nothing to raise."""

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError

    def reset(self):
        pass


class ObjectState(State):
    """Python values given as keyword arguments, kept as attributes of the state."""

    def __init__(self, broadcast_object, get_rank, **kwargs):
        self._saved_objects = dict(kwargs)
        self._put_back()
        super().__init__(broadcast_object, get_rank)

    def _put_back(self):
        for name, value in self._saved_objects.items():
            setattr(self, name, value)

    def save(self):
        self._saved_objects = {name: getattr(self, name) for name in self._saved_objects}

    def restore(self):
        self._put_back()

    def sync(self):
        if self._saved_objects:
            self._saved_objects = self._broadcast_object(self._saved_objects)
            self._put_back()


def run_fn(func):
    """func(state, ...) after state.sync(), once (see the module's note)."""
    @functools.wraps(func)
    def run(state, *args, **kwargs):
        state.sync()
        return func(state, *args, **kwargs)
    return run
