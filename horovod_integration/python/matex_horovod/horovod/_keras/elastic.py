"""Horovod's elastic Keras callbacks, written once and made on either Keras's
Callback by for_base (as _keras/callbacks.py does):

- CommitStateCallback: state.commit() every batches_per_commit batches and
  at the end of each epoch;
- UpdateBatchStateCallback: state.batch is the last finished batch, back to
  0 at the end of an epoch; an epoch resumed part-way has that many fewer
  steps;
- UpdateEpochStateCallback: state.epoch counts finished epochs, from the
  value the state had when training began.
"""
from .callback_classes import made_on


class _CommitState:
    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_left = batches_per_commit

    def on_train_begin(self, logs=None):
        self.batches_left = self.batches_per_commit

    def on_batch_end(self, batch, logs=None):
        self.batches_left -= 1
        if self.batches_left == 0:
            self.state.commit()
            self.batches_left = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class _UpdateBatchState:
    def __init__(self, state):
        super().__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        steps = (self.params or {}).get("steps")
        if steps:
            if self.steps_per_epoch is None:
                self.steps_per_epoch = steps
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class _UpdateEpochState:
    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self.initial_epoch + epoch + 1


def for_base(callback_base):
    """The three callbacks as subclasses of callback_base (a Keras's Callback)."""
    return made_on(callback_base, (("CommitStateCallback", _CommitState),
                                   ("UpdateBatchStateCallback", _UpdateBatchState),
                                   ("UpdateEpochStateCallback", _UpdateEpochState)), __name__)
