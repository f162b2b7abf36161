"""Process sets: matex serves the global one only. Scripts that name
`hvd.global_process_set` (or pass nothing) work; any other set is refused."""
from .refusals import refuse


class ProcessSet:
    """A group of ranks. Only the global set (every rank) is served."""

    def __init__(self, ranks=None):
        if ranks is not None:
            refuse("ProcessSet(ranks)", "matex serves the global process set only")
        self.ranks = None
        self.process_set_id = 0

    def included(self):
        return True

    def __repr__(self):
        return "ProcessSet(global)"


global_process_set = ProcessSet()


def check(process_set, who):
    if process_set is not None and process_set is not global_process_set:
        refuse(f"{who}(process_set=...)", "matex serves the global process set only")


def add_process_set(*args, **kwargs):
    refuse("add_process_set", "matex serves the global process set only")


def remove_process_set(*args, **kwargs):
    refuse("remove_process_set", "matex serves the global process set only")
