"""The one place where matex meets the differences between the Keras 3
releases it supports (3.0 to 3.15, cmake/MatexFrameworkVersions.cmake), as
tf_integration/ops/tf_compat.h does for TensorFlow's headers. Each answer
comes from what the installed Keras has, not from its version number; the
patch modules ask here instead of testing versions themselves. A target
that moved in a way not listed here still fails loudly (_patching.target)."""
import threading
import weakref


def backup_and_restore_module():
    """The module of keras.callbacks.BackupAndRestore: backup_and_restore
    since Keras 3.1, backup_and_restore_callback in 3.0."""
    try:
        from keras.src.callbacks import backup_and_restore
    except ImportError:
        from keras.src.callbacks import backup_and_restore_callback as backup_and_restore
    return backup_and_restore


def variable_classes():
    """Keras's backend-independent variable class (Variable since Keras 3.7,
    KerasVariable before) and the TensorFlow backend's, which overrides it."""
    from keras.src.backend.common import variables
    from keras.src.backend.tensorflow import core
    common = getattr(variables, "Variable", None) or variables.KerasVariable
    return common, core.Variable


def builds_before_first_step(trainer_class):
    """Whether fit, evaluate and the *_on_batch calls build an unbuilt model
    from one batch before the first step (_maybe_symbolic_build, Keras 3.5
    and later). Older releases build it inside the first traced step, too
    late to broadcast rank 0's variables before it: see note_epoch_iterators."""
    return hasattr(trainer_class, "_maybe_symbolic_build")


def batch_to_build_from(epoch_iterator):
    """What fit's epoch iterator offers to build a model from. Where the
    iterator is iterable itself (Keras 3.7 on; fit resets it after building),
    its first batch, as Keras's own _symbolic_build takes it: each item ends
    with the batches of one step, a list (3.7 to 3.9 or so, beside the step)
    or an iterator (later, beside the first and last step). Before 3.7 its
    batches' tf.TypeSpecs: shapes and dtypes are all that building reads, and
    taking them takes nothing from an iterator that fit does not reset."""
    if hasattr(type(epoch_iterator), "__iter__"):
        for item in epoch_iterator:
            batches = item[-1]
            return batches[0] if isinstance(batches, (list, tuple)) else next(batches)
    dataset = getattr(epoch_iterator, "_distributed_dataset", None)
    return getattr(dataset, "element_spec", None)


_fit_iterators = threading.local()


def note_epoch_iterators(patch, tf_trainer):
    """Keras before 3.5: fit makes its TFEpochIterator and then its train
    function, with no build between them. Each thread's latest iterator is
    noted, so that make_train_function can build the model from it
    (batch_of_fit) as later releases' fit does."""
    def make(original):
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            _fit_iterators.latest = weakref.ref(self)
        return __init__
    patch(tf_trainer.TFEpochIterator, "__init__", make)


def batch_of_fit():
    """batch_to_build_from() the epoch iterator this thread made last
    (note_epoch_iterators), or None (Keras 3.5 and later, or none made)."""
    noted = getattr(_fit_iterators, "latest", None)
    iterator = noted() if noted is not None else None
    return batch_to_build_from(iterator) if iterator is not None else None


def save_weights_owner():
    """Where save_weights lives: keras.src.saving.saving_api, which
    Model.save_weights calls since Keras 3.2, or before that the Model
    method itself."""
    from keras.src.saving import saving_api
    if hasattr(saving_api, "save_weights"):
        return saving_api
    import keras
    return keras.Model
