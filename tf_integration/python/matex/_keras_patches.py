"""The Keras 3 patches MATEX_ENABLE=1 applies (see _activation.py).

- optimizer.apply (and LossScaleOptimizer.apply): the gradients are reduced
  across ranks first, so clipping, weight decay and loss-scale checks see the
  global gradient. Inside fit, each rank's gradient is weighted by its local
  batch size (sum of n_r * g_r over the sum of n_r, in one grouped allreduce),
  so uneven slices give the gradient of the global batch's mean loss; in
  custom loops the weight is the slice _batch_layout handed out last.
- fit / evaluate / predict: every global batch the data adapter produces is
  cut into contiguous slices, rank r taking the r-th, before the input
  pipeline's per-row maps where they are pure (_input_sharding.py); predict
  gathers every rank's outputs, in order; the metrics' results are computed
  from their states summed over ranks (exact for sums and counts); progress
  output, CSVLogger and TensorBoard stay on rank 0; variables
  are broadcast from rank 0 before the first step. A step that XLA compiles
  (jit_compile=True) gets whole batches and cuts its slice inside the step;
  where XLA cannot compile matex's ops (a GPU), jit_compile is off.
- custom loops: the trainable variables are broadcast from rank 0 before an
  optimizer's first update (eagerly, also when the step is traced); batched
  tf.data iteration is sliced once it feeds training (_loop_iterator.py).
- BatchNormalization and Dropout see the global batch (_layer_patches.py).
- before any broadcast, the ranks check that they hold the same variables;
  fit and evaluate check that they were given the same arrays (_same_data.py).
- files: every writer Keras and TensorFlow offer writes once, from rank 0,
  whole, and returns on every rank once the file is complete (_file_patches.py).
- losses written for a global batch (tf.nn.compute_average_loss, reduction
  "sum") and loss scaling give one process's gradient (_loss_patches.py);
  sparse gradients stay sparse (_gradients.py).
"""
import sys
import weakref

import keras
import tensorflow as tf

from . import (_batch_layout, _collectives, _file_patches, _gradients, _input_sharding, _keras_compat,
               _layer_patches, _loop_iterator, _loss_patches, _metric_patches, _runtime, _same_data, _scope,
               _variable_sync)
from ._patching import arguments_as_keywords
from ._patching import patch as _patch
from ._patching import patch_methods

_flag, _setting = _scope.flag, _scope.setting


_warned_strategy = [False]


def _under_strategy():
    """True inside a tf.distribute strategy other than the default one, or once
    the script has imported Horovod: it distributes itself, and matex steps
    aside (warning once)."""
    if not tf.distribute.has_strategy() and "horovod.tensorflow" not in sys.modules:
        return False
    if not _warned_strategy[0]:
        _warned_strategy[0] = True
        import warnings
        warnings.warn("matex: the script uses a tf.distribute strategy or Horovod; MATEX_ENABLE=1 steps aside "
                      "for its fit, evaluate and optimizer updates")
    return True


# ---- gradients ---------------------------------------------------------------------------------------

def _make_apply(original):
    def apply(self, grads, trainable_variables=None):
        if _flag("reduced") or _under_strategy():
            return original(self, grads, trainable_variables)
        _batch_layout.note_optimizer(self)
        if _runtime.size() > 1:
            _variable_sync.sync_before_first_apply(self, trainable_variables)
            _loss_patches.check_unreduced()
            grads = _gradients.reduce(list(grads), self)
        with _setting("reduced", True):
            result = original(self, grads, trainable_variables)
        _batch_layout.reset_after_update()
        return result
    return apply


def _make_train_step(original):
    def train_step(self, data):
        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        first = next(t for t in tf.nest.flatten(x) if t is not None)
        if _batch_layout.in_step() or not _flag("sharding"):
            # Called from a step of the script's (super().train_step): sliced there. Outside fit and
            # evaluate (train_on_batch, a custom loop calling train_step) the batch is not sliced by
            # matex's fit: the layout is the custom loops' (_batch_layout.current()).
            return original(self, data)
        if _flag("whole_batches") and _runtime.size() > 1:
            # An XLA-compiled step gets the global batch and cuts its slice itself: the global size
            # and the offset are then compile-time constants, as XLA needs them (random draws' shapes).
            rows = tf.shape(first)[0]
            lo, hi = _input_sharding.slice_bounds(rows)
            data = tf.nest.map_structure(lambda t: t[lo:hi], data)
            with _batch_layout.in_fit(hi - lo, total=rows, offset=lo):
                return original(self, data)
        with _batch_layout.in_fit(tf.shape(first)[0]):
            return original(self, data)
    return train_step


def _make_keras_step(original):
    """Keras' own train_step / test_step: the batch layout, and its metric
    updates left to fit's aggregation (_metric_patches)."""
    with_layout = _make_train_step(original)

    def step(self, data):
        with _setting("keras_metrics", True):
            return with_layout(self, data)
    return step


def _make_scripts_step(original):
    """A train_step or test_step of the script's own (the Keras guide's way to
    customise fit): the batch layout as for Keras' step, and the logs it
    returns for the model's metrics ({m.name: m.result()}) replaced by their
    values from states summed over ranks, as Keras' step gets them."""
    with_layout = _make_train_step(original)

    def step(self, data):
        logs = with_layout(self, data)
        if not _flag("sharding") or _runtime.size() == 1 or not isinstance(logs, dict):
            return logs
        aggregated = self.get_metrics_result()
        return {k: aggregated.get(k, v) for k, v in logs.items()}
    return step


# ---- data sharding -----------------------------------------------------------------------------------

def _make_get_data_adapter(original):
    def get_data_adapter(*args, **kwargs):
        adapter = original(*args, **kwargs)
        if (_flag("sharding") or _flag("predicting")) and not _flag("whole_batches") and _runtime.size() > 1:
            make_dataset = adapter.get_tf_dataset
            adapter.get_tf_dataset = lambda: _input_sharding.for_this_rank(make_dataset())
        return adapter
    return get_data_adapter


def _gathered(outputs):
    """A predict step's outputs for this rank's rows, made those of the whole
    global batch, in rank order (so in the batch's order)."""
    def gather(t):
        if not isinstance(t, tf.Tensor):
            raise TypeError(f"matex: predict under MATEX_ENABLE=1 gathers every rank's outputs, and cannot gather "
                            f"a {type(t).__name__}; set MATEX_INPUT_SHARDING=replicate for this script")
        return _collectives.allgather(t)
    return tf.nest.map_structure(gather, outputs)


def _make_predict_step(original):
    """The outermost predict step gathers (a script's own predict_step that calls
    Keras' through super() is one step, gathered once)."""
    def predict_step(self, data):
        if not _flag("predicting") or _flag("predict_step"):
            return original(self, data)
        with _setting("predict_step", True):
            outputs = original(self, data)
        return _gathered(outputs)
    return predict_step


# model -> ((steps_per_execution, run_eagerly, jit_compile), its traced predict function with the
# gathers): kept off the model, so that saving or exporting it never traces matex's collectives in.
_gathering_predict_functions = weakref.WeakKeyDictionary()


def _predict_settings(model):
    return (getattr(model, "steps_per_execution", 1), getattr(model, "run_eagerly", False),
            getattr(model, "jit_compile", False))


def _make_predict(original):
    """predict: each rank computes the outputs of its rows of every batch, and
    every rank returns the whole array, in order. An XLA-compiled step (whose
    gathered rows must be alike on every rank) predicts every row on every
    rank, as do the replicate setting and tf.distribute. A predict from a
    callback of fit is a predict of its own (not fit's slicing)."""
    def predict(self, *args, **kwargs):
        with _setting("sharding", False), _setting("whole_batches", False):
            if (_runtime.size() == 1 or _model_has_strategy(self) or _compiles_steps_with_xla(self)
                    or _runtime.config("MATEX_INPUT_SHARDING") == "replicate"):
                return original(self, *args, **kwargs)
            kwargs = _for_this_rank_keywords(original, self, args, kwargs)
            _same_data.check_same_arrays(kwargs, "predict")
            _wrap_scripts_steps(self)
            settings, traced = _gathering_predict_functions.get(self, (None, None))
            # Its own traced function (with the gathers), kept apart from predict_on_batch's (without).
            plain = self.predict_function
            self.predict_function = traced if settings == _predict_settings(self) else None
            try:
                with _setting("predicting", True):
                    return original(self, **kwargs)
            finally:
                if self.predict_function is not None:
                    _gathering_predict_functions[self] = (_predict_settings(self), self.predict_function)
                self.predict_function = plain
    return predict


# ---- metrics -----------------------------------------------------------------------------------------

def _make_get_metrics_result(original):
    def get_metrics_result(self):
        if not _flag("sharding") or _runtime.size() == 1:
            return original(self)
        variables = [v for m in self.metrics for v in m.variables]
        if not variables:
            return original(self)
        return _metric_patches.with_summed_states(variables, lambda: original(self))
    return get_metrics_result


# ---- fit, evaluate: sharding scope, rank-0 output, broadcast, no XLA -----------------------------------

# By class name, so that Keras 3's and tf_keras's (and subclasses of either) match. ModelCheckpoint runs
# on every rank: its saves are collective writes from rank 0 (_file_patches.py).
_RANK0_ONLY_CALLBACKS = ("CSVLogger", "TensorBoard")


def _is_a(callback, names):
    return any(c.__name__ in names for c in type(callback).__mro__)


def _rank0_files_done(callback_base):
    """A callback for every rank (Keras 3's or tf_keras's): fit returns once
    rank 0's CSVLogger and TensorBoard have closed their files. On every rank
    whatever callbacks each has, so that a script that gives rank 0 more
    callbacks than the others still makes the same agreements everywhere."""
    class Rank0FilesDone(callback_base):
        def on_train_end(self, logs=None):
            _file_patches.rank0_done()
    return Rank0FilesDone()


def _callback_base(model):
    if any(c.__module__.startswith("tf_keras") for c in type(model).__mro__):
        import tf_keras
        return tf_keras.callbacks.Callback
    return keras.callbacks.Callback


def _for_this_rank(callbacks, callback_base):
    if callbacks is not None and not isinstance(callbacks, (list, tuple)):
        return callbacks  # a CallbackList fit hands to its own evaluate
    callbacks = list(callbacks or [])
    if _runtime.size() > 1:
        callbacks.append(_rank0_files_done(callback_base))
    rank0_only = [c for c in callbacks if _is_a(c, _RANK0_ONLY_CALLBACKS)]
    if _runtime.rank() == 0:
        for c in rank0_only:
            _file_patches.alone_on_rank0(c)
        return callbacks
    for c in callbacks:
        if _is_a(c, ("ModelCheckpoint",)):
            c.verbose = 0  # its messages ("saving model to ...") come from rank 0
    return [c for c in callbacks if not _is_a(c, _RANK0_ONLY_CALLBACKS)]


def _model_has_strategy(model):
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or strategy is tf.distribute.get_strategy():
        return _under_strategy()  # Horovod
    with strategy.scope():
        return _under_strategy()


def _for_this_rank_keywords(original, model, args, kwargs):
    """fit / evaluate arguments, positional ones too, as keywords, with progress
    output and the rank-0-only callbacks left to rank 0."""
    arguments = arguments_as_keywords(original, model, args, kwargs)
    if _runtime.rank() != 0:
        arguments["verbose"] = 0
    arguments["callbacks"] = _for_this_rank(arguments.get("callbacks"), _callback_base(model))
    return arguments


def _compiles_steps_with_xla(model):
    return bool(getattr(model, "jit_compile", False)) and not getattr(model, "run_eagerly", False)


def _make_sharded(original, what):
    """fit or evaluate: each rank trains on its slice of every batch. The data
    adapter cuts the slices, except for XLA-compiled steps, which get whole
    batches and cut them themselves (_make_train_step)."""
    def sharded(self, *args, **kwargs):
        if _model_has_strategy(self):
            return original(self, *args, **kwargs)
        kwargs = _for_this_rank_keywords(original, self, args, kwargs)
        _same_data.check_same_arrays(kwargs, what)
        whole_batches = _compiles_steps_with_xla(self)
        if getattr(self, "_matex_whole_batches", None) != whole_batches:
            # Steps traced outside fit/evaluate (train_on_batch) or before jit_compile changed slice
            # otherwise: traced again.
            self.train_function = self.test_function = None
            self._matex_whole_batches = whole_batches
        with _setting("sharding", True), _setting("whole_batches", whole_batches), _setting("sharded_model", self):
            return original(self, **kwargs)
    return sharded


def _make_fit(original):
    return _make_sharded(original, "fit")


def _make_evaluate(original):
    return _make_sharded(original, "evaluate")


def _make_maybe_symbolic_build(original):
    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        original(self, iterator=iterator, data_batch=data_batch)
        if self.built or not _flag("sharding") or (iterator is None and data_batch is None):
            return
        # Keras defers building to the first traced step without a strategy; matex builds now,
        # so rank 0's variables can be broadcast before any step.
        _build_before_first_step(self, data_batch if data_batch is not None else _keras_compat.batch_spec(iterator))
    return _maybe_symbolic_build


def _build_before_first_step(model, data_batch):
    """Builds an unbuilt model from a batch, or from its tf.TypeSpecs (all
    that Keras reads of it), before fit's first step."""
    if data_batch is None:
        return  # nothing to build from: the model builds in its first step (MATEX_SEED starts the ranks alike)
    if type(model).call is keras.Model.call:
        return  # no call() of its own (a model whose train_step calls sub-models): it builds in its first step
    model._symbolic_build(data_batch=data_batch)


def _make_make_train_function(original):
    def make_train_function(self, force=False):
        if not self.built and _flag("sharded_model") is self and not _model_has_strategy(self):
            # Keras before 3.5, in this model's fit (not another model's train_on_batch in a
            # callback): what _maybe_symbolic_build does in later releases.
            _build_before_first_step(self, _keras_compat.batch_spec_of_fit())
        if not getattr(self, "_matex_synced", False) and self.built and not _model_has_strategy(self):
            # A model built before fit (an Input layer, or a call) is synced here; one that
            # builds lazily in its first step is synced by the optimizer's first update.
            _variable_sync.broadcast_variables(self.variables)
            if self.optimizer is not None and self.optimizer.built:
                _variable_sync.broadcast_variables(self.optimizer.variables)
                self.optimizer._matex_synced = True
            self._matex_synced = True
        _wrap_scripts_steps(self)
        return original(self, force)
    return make_train_function


def _make_make_test_function(original):
    def make_test_function(self, force=False):
        _wrap_scripts_steps(self)
        return original(self, force)
    return make_test_function


def _wrap_scripts_steps(model):
    """The script's own train_step / test_step, if its model class has them."""
    from keras.src.backend.tensorflow import trainer as tf_trainer
    for step, make in (("train_step", _make_scripts_step), ("test_step", _make_scripts_step),
                       ("predict_step", _make_predict_step)):
        mine = getattr(type(model), step)
        if not getattr(mine, "_matex_patched", False) and mine is not getattr(tf_trainer.TensorFlowTrainer, step):
            _patch(type(model), step, make)


def _make_compile(original):
    import inspect
    signature = inspect.signature(original)

    def compile(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        if _runtime.xla_lowers_collectives():
            return original(*bound.args, **bound.kwargs)  # XLA:CPU compiles the steps with matex's ops in them
        if bound.arguments.get("jit_compile") is True:
            import warnings
            warnings.warn("matex: compile(jit_compile=True) runs without XLA: matex's collectives have no XLA "
                          "lowering for this device or build (docs/tensorflow.md)")
        bound.arguments["jit_compile"] = False
        return original(*bound.args, **bound.kwargs)
    return compile


def apply_all():
    from keras.src.backend.tensorflow import trainer as tf_trainer
    from keras.src.optimizers import base_optimizer, loss_scale_optimizer
    from keras.src.trainers import data_adapters
    from keras.src.trainers import trainer as base_trainer

    for optimizer in (base_optimizer.BaseOptimizer, loss_scale_optimizer.LossScaleOptimizer):
        _patch(optimizer, "apply", _make_apply)
    patch_methods(_patch, tf_trainer.TensorFlowTrainer, {
        "train_step": _make_keras_step, "test_step": _make_keras_step, "fit": _make_fit,
        "evaluate": _make_evaluate, "predict": _make_predict, "predict_step": _make_predict_step,
        "make_train_function": _make_make_train_function, "make_test_function": _make_make_test_function})
    if _keras_compat.builds_before_first_step(tf_trainer.TensorFlowTrainer):
        _patch(tf_trainer.TensorFlowTrainer, "_maybe_symbolic_build", _make_maybe_symbolic_build)
    else:
        _keras_compat.note_epoch_iterators(_patch, tf_trainer)
    _patch(data_adapters, "get_data_adapter", _make_get_data_adapter)
    patch_methods(_patch, base_trainer.Trainer, {"get_metrics_result": _make_get_metrics_result,
                                                 "compile": _make_compile})
    _file_patches.apply_all(_patch)
    _loop_iterator.apply_all(_patch)
    _layer_patches.apply_all(_patch)
    _loss_patches.apply_all(_patch)
    from . import _half_gradients
    _half_gradients.apply_all()
    _metric_patches.apply_all(_patch)
    from . import _tf1_patches
    _tf1_patches.apply_all(_patch)
