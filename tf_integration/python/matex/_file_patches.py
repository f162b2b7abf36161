"""Files the script writes, under MATEX_ENABLE=1 on 2+ ranks: each is written
once, by rank 0, whole, and every rank returns from the writer only once the
file is complete, so a read that follows (load_model, load_weights,
Checkpoint.restore, tf.saved_model.load, BackupAndRestore's resume, the
script's own open()) sees the whole file on every rank.

- The writers: keras.saving.save_model (Model.save), save_weights,
  Model.export, tf.saved_model.save, tf.train.Checkpoint's writes (save,
  write, CheckpointManager.save), BackupAndRestore's backups and its clean-up,
  keras.utils.get_file's download, and tf_keras's Model.save and save_weights.
  Every rank calls the writer, as the script does; rank 0 writes, the others
  skip the writing and keep the rest of the call's work (a CheckpointManager
  still counts its checkpoint and knows the latest; a save_best_only decision
  is taken on every rank from the same global logs). Then one small
  allreduce: the ranks return together, and raise together when rank 0's
  write failed.
- Whole: Keras' formats and SavedModels are written into a hidden staging
  folder beside the target (.NAME.matex-partial-XXXX) and moved into place
  once complete, so a rank 0 killed mid-save leaves no partial file under
  the final name (a later save of the same name removes the stale folder).
  TensorFlow's checkpoints need no staging: TensorFlow writes each file under
  a temporary name and renames it.
- Callbacks: ModelCheckpoint runs on every rank (its saves are writers
  above; only rank 0 prints and creates folders). CSVLogger and TensorBoard
  run on rank 0 only; fit ends with the ranks agreeing once rank 0 has closed
  their files. tf.summary.create_file_writer gives the other ranks a writer
  that writes nothing, so an event file holds one copy of each summary.

Not covered: the script's own open(), np.save, pickle and other writers that
matex cannot see: every rank writes them (write them on rank 0 only:
`if matex.rank() == 0: np.save(path, a)`, docs/tensorflow.md), a writer
called inside a traced function, TF1's tf.compat.v1.train.Saver, and paths on
a node-local disk that other nodes read (rank 0 writes on its own node).
"""
import itertools
import os
import shutil
import sys
import tempfile

import tensorflow as tf

from . import _collectives, _runtime, _scope

_STAGING = ".matex-partial-"
_agreements = itertools.count()


def _agree(failed):
    """The ranks' agreement after a write: 1 when rank 0's write failed."""
    status = tf.constant([1 if failed else 0], tf.int32)
    return int(_collectives.allreduce(status, op="max", name=f"matex.files.{next(_agreements)}").numpy()[0])


def _shared():
    """Whether this call is one the ranks make together: 2+ ranks, eagerly,
    not nested in rank 0's write."""
    return _runtime.size() > 1 and tf.executing_eagerly() and not _scope.flag("writing")


def rank0_writes(what, path, write, staged=True, elsewhere=lambda: None):
    """write(p) on rank 0 only, p being `path` or, if staged, its stand-in in
    a staging folder, moved into place when complete; the ranks then agree.
    Returns write's result on rank 0 and elsewhere() on the other ranks."""
    if _scope.flag("writing") or _runtime.size() == 1:  # nested in rank 0's write, or one rank
        return _staged_write(path, write) if staged else write(path)
    if not tf.executing_eagerly():
        return write(path)  # inside a traced function: left as it is
    if _runtime.rank() != 0:
        if _agree(False):
            raise RuntimeError(f"matex: rank 0 could not write {what} '{os.fspath(path)}' (its error is in rank 0's "
                               "output); the other ranks stop with it")
        return elsewhere()
    try:
        with _scope.setting("writing", True):
            result = _staged_write(path, write) if staged else write(path)
    except BaseException:
        _agree(True)
        raise
    _agree(False)
    return result


def rank0_done():
    """All ranks return once rank 0 has finished what it wrote alone."""
    if _shared():
        _agree(False)


# ---- staging --------------------------------------------------------------------------------------

def _stageable(path):
    return isinstance(path, (str, os.PathLike)) and "://" not in os.fspath(path)


def _staged_write(path, write):
    if not _stageable(path):
        return write(path)
    target = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(target)
    staging = tempfile.mkdtemp(prefix=f".{name}{_STAGING}", dir=parent)
    try:
        result = write(os.path.join(staging, name))
        for entry in sorted(os.listdir(staging)):
            _move_into_place(os.path.join(staging, entry), os.path.join(parent, entry))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _remove_stale_staging(parent, name)
    return result


def _move_into_place(source, destination):
    """A rename: the destination is the old file or folder until the new one
    replaces it whole (a folder: the old one is renamed away first)."""
    if os.path.isdir(destination) and not os.path.islink(destination):
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(destination)}.matex-old-",
                               dir=os.path.dirname(destination))
        os.replace(destination, os.path.join(old, "old"))
        os.replace(source, destination)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(source, destination)


def _remove_stale_staging(parent, name):
    """Staging folders of `name` left by a rank 0 that died mid-save."""
    prefix = f".{name}{_STAGING}"
    for entry in os.listdir(parent):
        if entry.startswith(prefix):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


# ---- Keras 3 ------------------------------------------------------------------------------------------

def _keeps_prompt(filepath, overwrite):
    """Keras asks before overwriting when overwrite=False: rank 0 asks, on the real path."""
    return not overwrite and _stageable(filepath) and os.path.exists(filepath)


def _make_save_model(original):
    def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
        return rank0_writes("the model", filepath, lambda p: original(model, p, overwrite, zipped, **kwargs),
                            staged=not _keeps_prompt(filepath, overwrite))
    return save_model


def _make_save_weights(original):
    def save_weights(model, filepath, overwrite=True, max_shard_size=None, **kwargs):
        return rank0_writes("the weights", filepath,
                            lambda p: original(model, p, overwrite, max_shard_size, **kwargs),
                            staged=not _keeps_prompt(filepath, overwrite))
    return save_weights


def _make_export(original):
    def export(self, filepath, *args, **kwargs):
        return rank0_writes("the exported model", filepath, lambda p: original(self, p, *args, **kwargs))
    return export


def _make_backup(original):
    def backup(self, *args, **kwargs):
        return rank0_writes("the backup", self.backup_dir, lambda _: original(self, *args, **kwargs), staged=False)
    return backup


def _make_get_file(original):
    def get_file(*args, **kwargs):
        if not _shared():
            return original(*args, **kwargs)
        # Rank 0 downloads (and extracts); the others then find the file in the cache.
        name = kwargs.get("fname") or (args[0] if args and args[0] else kwargs.get("origin", "a file"))
        result = rank0_writes("the download", name, lambda _: original(*args, **kwargs), staged=False)
        return result if _runtime.rank() == 0 else original(*args, **kwargs)
    return get_file


def _make_not_off_rank0(original):
    """A folder created for a write that rank 0 makes (ModelCheckpoint's):
    created by rank 0 alone."""
    def call(*args, **kwargs):
        if _scope.flag("not_writer"):
            return None
        return original(*args, **kwargs)
    return call


def _make_model_checkpoint_save(original):
    def _save_model(self, *args, **kwargs):
        if _runtime.size() > 1 and _runtime.rank() != 0:
            with _scope.setting("not_writer", True):
                return original(self, *args, **kwargs)
        return original(self, *args, **kwargs)
    return _save_model


# ---- TensorFlow ---------------------------------------------------------------------------------------

def _prefix_text(file_prefix):
    if isinstance(file_prefix, (str, os.PathLike)):
        return os.fspath(file_prefix)
    return tf.convert_to_tensor(file_prefix).numpy().decode()


def _make_checkpoint_write(original):
    """Checkpoint._write, under save, write and CheckpointManager.save: rank 0
    writes and runs the write callbacks (the 'checkpoint' state file, a
    manager's sweep of old checkpoints); the other ranks run the callbacks'
    bookkeeping without their files."""
    from tensorflow.python.checkpoint import checkpoint as checkpoint_module

    def _write(self, file_prefix, options=None):
        def write(prefix):
            result = original(self, prefix, options=options)
            if options is not None and options.experimental_enable_async_checkpoint and hasattr(self, "sync"):
                self.sync()  # the others return only once it is written
            return result

        def elsewhere():
            prefix = _prefix_text(file_prefix)
            if options is not None and options.experimental_write_callbacks:
                with _scope.setting("not_writer", True):
                    checkpoint_module._execute_callbacks(options.experimental_write_callbacks, prefix)
            return prefix
        return rank0_writes("the checkpoint", file_prefix, write, staged=False, elsewhere=elsewhere)
    return _write


def _make_saved_model_save(original):
    def save(obj, export_dir, *args, **kwargs):
        return rank0_writes("the SavedModel", export_dir, lambda p: original(obj, p, *args, **kwargs))
    return save


def _make_create_file_writer(original):
    def create_file_writer(*args, **kwargs):
        if _runtime.size() > 1 and _runtime.rank() != 0:
            return tf.summary.create_noop_writer()
        return original(*args, **kwargs)
    return create_file_writer


# ---- tf_keras -----------------------------------------------------------------------------------------

def _make_tf_keras_writer(original):
    what = "the model" if original.__name__ == "save" else "the weights"

    def writer(self, filepath, *args, **kwargs):
        return rank0_writes(what, filepath, lambda p: original(self, p, *args, **kwargs))
    return writer


def apply_tf_keras(patch):
    import tf_keras
    from tf_keras.src import callbacks
    for writer in ("save", "save_weights"):
        patch(tf_keras.Model, writer, _make_tf_keras_writer)
    patch(callbacks.ModelCheckpoint, "_save_model", _make_model_checkpoint_save)


# ---- applying -----------------------------------------------------------------------------------------

def _rebind(replacements, roots=("keras", "tensorflow", "tf_keras")):
    """Every name the frameworks bound at import to a replaced function
    (keras.saving.save_model, tf.saved_model.save, ...) names its
    replacement: {id(original): replacement}."""
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] not in roots:
            continue
        for attribute, value in list(getattr(module, "__dict__", {}).items()):
            replacement = replacements.get(id(value))
            if replacement is not None and value is replacement.__wrapped__:
                setattr(module, attribute, replacement)


def _patch_everywhere(patch, owner, name, make, replacements):
    patch(owner, name, make)
    replacement = getattr(owner, name)
    replacements[id(replacement.__wrapped__)] = replacement


def apply_all(patch):
    import keras
    from keras.src.callbacks import backup_and_restore, model_checkpoint
    from keras.src.saving import saving_api
    from keras.src.utils import file_utils
    from tensorflow.python.checkpoint import checkpoint as checkpoint_module
    from tensorflow.python.checkpoint import checkpoint_management
    from tensorflow.python.lib.io import file_io
    from tensorflow.python.ops import summary_ops_v2
    from tensorflow.python.saved_model import save as saved_model_save

    replaced = {}
    _patch_everywhere(patch, saving_api, "save_model", _make_save_model, replaced)
    _patch_everywhere(patch, saving_api, "save_weights", _make_save_weights, replaced)
    patch(keras.Model, "export", _make_export)
    patch(backup_and_restore.BackupAndRestore, "_save_model", _make_backup)
    patch(backup_and_restore.BackupAndRestore, "on_train_end", _make_backup)
    _patch_everywhere(patch, file_utils, "get_file", _make_get_file, replaced)
    patch(model_checkpoint.ModelCheckpoint, "_save_model", _make_model_checkpoint_save)
    _patch_everywhere(patch, file_utils, "makedirs", _make_not_off_rank0, replaced)
    _patch_everywhere(patch, file_io, "recursive_create_dir_v2", _make_not_off_rank0, replaced)
    patch(checkpoint_module.Checkpoint, "_write", _make_checkpoint_write)
    for helper in ("update_checkpoint_state_internal", "_delete_file_if_exists"):
        _patch_everywhere(patch, checkpoint_management, helper, _make_not_off_rank0, replaced)
    _patch_everywhere(patch, saved_model_save, "save", _make_saved_model_save, replaced)
    _patch_everywhere(patch, summary_ops_v2, "create_file_writer_v2", _make_create_file_writer, replaced)
    _rebind(replaced)
