"""tf_keras (Keras 2) patches, applied when the script imports tf_keras (now or
after activation):

- Model.make_train_function: every variable of a built model (moving
  statistics too) is broadcast from rank 0 before fit's first step;
- the optimizers' apply_gradients (tf_keras.optimizers.Optimizer, the
  legacy OptimizerV2, and both loss-scale optimizers, which override it): the
  trainable variables are broadcast from rank 0 before the first update and
  the gradients are reduced across ranks before clipping, weight decay and
  loss-scale checks; the verify log records the updated variables;
- Model.fit / evaluate: the ranks' arrays are compared (_same_data.py),
  progress output on rank 0 only, and CSVLogger and TensorBoard kept to
  rank 0; Model.save and save_weights (ModelCheckpoint's too) write from
  rank 0, whole, and return once the file is complete (_file_patches.py).

tf_keras's fit is not sharded: every rank trains on the whole global batch,
so the result is exactly one process's (BatchNormalization and Dropout
included) but not faster. A one-time warning says so; Keras 3 is the
supported path for data-parallel speed.
"""
import sys
import warnings

from . import _file_patches, _gradients, _import_hook, _runtime, _same_data, _variable_sync
from ._patching import patch_methods

_warned = [False]


def _make_apply_gradients(original):
    from . import _keras_patches as k3

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        if k3._flag("reduced") or k3._under_strategy():
            return original(self, grads_and_vars, *args, **kwargs)
        pairs = list(grads_and_vars)
        grads, variables = [g for g, _ in pairs], [v for _, v in pairs]
        # Not noted for custom-loop sharding (_batch_layout.note_optimizer): tf_keras's BatchNormalization and
        # Dropout do not see the global batch, so its custom loops keep whole batches on every rank.
        if _runtime.size() > 1:
            _variable_sync.sync_before_first_apply(self, variables)
            grads = _gradients.reduce(grads)
        with k3._setting("reduced", True):
            return original(self, list(zip(grads, variables)), *args, **kwargs)
    return apply_gradients


def _make_fit_or_evaluate(original):
    from . import _keras_patches as k3
    call = original.__name__

    def run(self, *args, **kwargs):
        if k3._model_has_strategy(self):
            return original(self, *args, **kwargs)
        if _runtime.size() > 1 and not _warned[0]:
            _warned[0] = True
            warnings.warn("matex: tf_keras fit/evaluate are not sharded: every rank computes the whole global "
                          "batch (the same result as one process, not faster). Keras 3 is sharded.")
        arguments = k3._for_this_rank_keywords(original, self, args, kwargs)
        _same_data.check_same_arrays(arguments, call)
        return original(self, **arguments)
    return run


def _make_make_train_function(original):
    from . import _keras_patches as k3

    def make_train_function(self, *args, **kwargs):
        if not getattr(self, "_matex_synced", False) and self.built and not k3._model_has_strategy(self):
            _variable_sync.broadcast_variables(self.variables)  # moving statistics too
            self._matex_synced = True
        return original(self, *args, **kwargs)
    return make_train_function


def apply_all(patch):
    from . import _keras_patches as k3
    import tf_keras
    from tf_keras.src.mixed_precision import loss_scale_optimizer
    from tf_keras.src.optimizers import optimizer as new_optimizer
    from tf_keras.src.optimizers.legacy import optimizer_v2

    # The loss-scale optimizers override apply_gradients: reduce before their finiteness check, so every rank
    # decides alike.
    for optimizer in (new_optimizer.Optimizer, optimizer_v2.OptimizerV2, loss_scale_optimizer.LossScaleOptimizer,
                      loss_scale_optimizer.LossScaleOptimizerV3):
        patch(optimizer, "apply_gradients", _make_apply_gradients)
    patch_methods(patch, tf_keras.Model, {"fit": _make_fit_or_evaluate, "evaluate": _make_fit_or_evaluate,
                                          "make_train_function": _make_make_train_function})
    _file_patches.apply_tf_keras(patch)


def apply_when_imported(patch):
    """Patches tf_keras now if the script has imported it, else right after it does."""
    module = sys.modules.get("tf_keras")
    if module is not None:
        initializing = getattr(getattr(module, "__spec__", None), "_initializing", False)
        if initializing and "tf_keras" not in _import_hook.executed:
            raise RuntimeError("matex: tf_keras was half imported when matex activated, so its optimizers cannot be "
                               "patched; matex refuses to train undistributed (unset MATEX_ENABLE)")
        apply_all(patch)
        return
    _import_hook.after_import("tf_keras", lambda: apply_all(patch))
