"""The exception types Horovod scripts catch. matex's engine raises its own
errors as RuntimeError; these exist so that `except HorovodInternalError`
in a script still names a real class (elastic training is not served)."""


class HorovodInternalError(RuntimeError):
    """A collective failed (a peer died, timed out or disagreed)."""


class HostsUpdatedInterrupt(RuntimeError):
    """Elastic Horovod's signal that hosts changed; never raised by matex."""

    def __init__(self, skip_sync=False):
        super().__init__("hosts updated")
        self.skip_sync = skip_sync
