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


def batch_spec(epoch_iterator):
    """The tf.TypeSpecs of the batches of fit's epoch iterator (a TFEpochIterator
    in every release), or None. Shapes and dtypes are all that building a
    model reads, and taking them takes nothing from the data: a batch taken
    from the iterator would be lost to a one-shot generator, and the fresh
    iterator fit makes after building would reshuffle a dataset that
    reshuffles each iteration, unlike the plain run."""
    dataset = getattr(epoch_iterator, "_distributed_dataset", None)
    return getattr(dataset, "element_spec", None)


_fit_iterators = threading.local()


def note_epoch_iterators(patch, tf_trainer):
    """Keras before 3.5: fit makes its TFEpochIterator and then its train
    function, with no build between them. Each thread's latest iterator is
    noted, so that make_train_function can build the model from its batch
    spec (batch_spec_of_fit) as later releases' fit does."""
    def make(original):
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            _fit_iterators.latest = weakref.ref(self)
        return __init__
    patch(tf_trainer.TFEpochIterator, "__init__", make)


def batch_spec_of_fit():
    """batch_spec() of the epoch iterator this thread made last
    (note_epoch_iterators), or None (Keras 3.5 and later, or none made)."""
    noted = getattr(_fit_iterators, "latest", None)
    return batch_spec(noted() if noted is not None else None)


def save_weights_owner():
    """Where save_weights lives: keras.src.saving.saving_api, which
    Model.save_weights calls since Keras 3.2, or before that the Model
    method itself."""
    from keras.src.saving import saving_api
    if hasattr(saving_api, "save_weights"):
        return saving_api
    import keras
    return keras.Model
