"""Refusing what matex's Horovod API does not serve: at once, naming the call
or argument, never doing something else silently."""


class NotServed(NotImplementedError):
    """A Horovod call, argument or setting that matex does not serve."""


def refuse(what, why="matex does not serve it"):
    raise NotServed(f"horovod (served by matex): {what} is not supported: {why} (docs/horovod.md lists what is)")


def not_served(name, why="matex does not serve it"):
    """A stand-in for an unserved function: calling it refuses, naming it."""
    def stand_in(*args, **kwargs):
        refuse(name, why)
    stand_in.__name__ = name.rsplit(".", 1)[-1]
    stand_in.__doc__ = f"Not served by matex: {why}."
    return stand_in


class NotServedModule:
    """A stand-in for an unserved module (hvd.elastic): touching any name in it refuses, naming it."""

    def __init__(self, name, why):
        self._name, self._why = name, why

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        refuse(f"{self._name}.{attribute}", self._why)
