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
  folder beside the target (.NAME.matex-partial-XXXX, its missing parent
  folders created first) and moved into place once complete, each file by
  one rename, so a rank 0 killed mid-save leaves no partial file under a
  final name (a later save of the same name removes the stale folder). A
  SavedModel written into an existing folder moves in file by file; other
  files there stay, as with a plain write. TensorFlow's checkpoints need no
  staging: TensorFlow writes each file under a temporary name and renames it.
  Async checkpoints are written synchronously (a background thread's write
  would meet its agreement on one rank only).
- Callbacks: ModelCheckpoint runs on every rank (its saves are writers
  above; only rank 0 prints and creates folders). CSVLogger and TensorBoard
  (and their subclasses) run on rank 0 only, where a writer they call
  writes without an agreement; fit ends with the ranks agreeing once rank 0
  has closed their files. tf.summary.create_file_writer gives the other
  ranks a writer that writes nothing, so an event file holds one copy of
  each summary. keras.utils.get_file: rank 0 downloads and extracts, the
  others then take the cached file as it is.

These writers are collective: every rank must call them, as the unmodified
script does. A save that the script itself guards with `if rank == 0` waits
for the other ranks (MATEX_STALL_WARNING_SECONDS warns about it).

Not covered: the script's own open(), np.save, pickle and other writers that
matex cannot see: every rank writes them (write them on rank 0 only:
`if matex.rank() == 0: np.save(path, a)`, docs/tensorflow.md), a writer
called inside a traced function, TF1's tf.compat.v1.train.Saver, and paths on
a node-local disk that other nodes read (rank 0 writes on its own node).
"""
import itertools
import os
import shutil
import tempfile

import tensorflow as tf

from . import _collectives, _keras_compat, _runtime, _scope
from ._patching import patch_everywhere, rebind

_STAGING = ".matex-partial-"
_OLD = ".matex-old-"
_agreements = itertools.count()


def _agree(values):
    """One small allreduce (max) of int64 values, named by the ranks' count
    of agreements so far: the same sequence on every rank."""
    summed = _collectives.allreduce(tf.constant(values, tf.int64), op="max",
                                    name=f"matex.files.{next(_agreements)}")
    return [int(v) for v in summed.numpy()]


def _same_path_everywhere(path):
    """Whether every rank names the same file (one agreement on a hash of
    its absolute path): a script that names files by rank (a checkpoint of
    each rank's own iterator) writes each rank's own."""
    import zlib
    text = os.path.abspath(_name_of(path))
    digest = zlib.crc32(text.encode())
    high, negated_low = _agree([digest, -digest])
    return high == -negated_low


def _shared():
    """Whether this call is one the ranks make together: 2+ ranks, eagerly,
    not nested in rank 0's write."""
    return _runtime.size() > 1 and tf.executing_eagerly() and not _scope.flag("writing")


def rank0_writes(what, path, write, staged=True, elsewhere=lambda: None, make_parents=False):
    """write(p) on rank 0 only, p being `path` or, if staged, its stand-in in
    a staging folder, moved into place when complete; the ranks then agree.
    Returns write's result on rank 0 and elsewhere() on the other ranks.
    Where the ranks name different files, each writes its own."""
    def write_here():
        return _staged_write(path, write, make_parents) if staged else write(path)
    if _scope.flag("writing") or _runtime.size() == 1:  # nested in rank 0's write, or one rank
        return write_here()
    if _scope.flag("skipping"):
        return elsewhere()  # nested in a write this rank skips (a checkpoint's write callbacks): no agreement
    if not tf.executing_eagerly():
        return write(path)  # inside a traced function: left as it is
    same_file = _same_path_everywhere(path)  # an agreement every rank makes
    writes_here = _runtime.rank() == 0 or not same_file
    result = None
    if writes_here:
        try:
            # A rank that writes its own file writes it whole: no file operation skipped (ModelCheckpoint's).
            with _scope.setting("writing", True), _scope.setting("not_writer", False):
                result = write_here()
        except BaseException:
            _agree([1, _runtime.rank()])  # the same agreement as below, on the ranks that wrote well
            raise
    failed_somewhere, failed_rank = _agree([0, -1])
    if failed_somewhere:
        raise RuntimeError(f"matex: rank {failed_rank} could not write {what} '{_name_of(path)}' (its error is in "
                           f"its output); the other ranks stop with it")
    if writes_here:
        return result
    with _scope.setting("skipping", True):
        return elsewhere()


def _name_of(path):
    try:
        return _prefix_text(path)
    except Exception:  # noqa: BLE001 - only for the message
        return str(path)


def alone_on_rank0(callback):
    """A callback that runs on rank 0 only (CSVLogger, TensorBoard, and
    subclasses): what it writes through the writers above (TensorBoard's
    embeddings save weights) is rank 0's alone, with no agreement the other
    ranks would never join. fit's Rank0FilesDone makes them wait for it."""
    import functools
    if getattr(callback, "_matex_alone", False):
        return callback
    for name in dir(type(callback)):
        method = getattr(callback, name, None)
        if callable(method) and (name.startswith("on_") or name == "set_model"):
            setattr(callback, name, functools.wraps(method)(_writing_alone(method)))
    callback._matex_alone = True
    return callback


def _writing_alone(method):
    def call(*args, **kwargs):
        with _scope.setting("writing", True):
            return method(*args, **kwargs)
    return call


def rank0_done():
    """All ranks return once rank 0 has finished what it wrote alone."""
    if _shared():
        _agree([0])


# ---- staging --------------------------------------------------------------------------------------

def _stageable(path):
    return isinstance(path, (str, os.PathLike)) and "://" not in os.fspath(path)


def _staged_write(path, write, make_parents=False):
    """write(stand-in) in a staging folder beside the target, then moved into
    place. A target whose folder is missing is written in place, as the plain
    write would be (Keras fails, legacy HDF5 saving makes the folder), unless
    `make_parents` (tf.saved_model.save makes them)."""
    if not _stageable(path):
        return write(path)
    target = os.path.realpath(os.fspath(path))  # through a link, as a plain write goes
    parent, name = os.path.split(target)
    if not os.path.isdir(parent) and not make_parents:
        return write(path)
    created = _make_parents(parent)
    staging = tempfile.mkdtemp(prefix=f".{name}{_STAGING}", dir=parent)
    try:
        result = write(os.path.join(staging, name))
        for entry in sorted(os.listdir(staging)):
            _move_into_place(os.path.join(staging, entry), os.path.join(parent, entry))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(created):  # as the plain write left them: not there (if still empty)
            try:
                os.rmdir(folder)
            except OSError:
                pass
        raise
    shutil.rmtree(staging, ignore_errors=True)
    _remove_stale_staging(parent, name)
    return result


def _make_parents(folder):
    """The missing folders up to `folder`, created; returns those this call
    made (another rank writing its own file there may make them too)."""
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    created = []
    for level in reversed(missing):
        try:
            os.mkdir(level)
            created.append(level)
        except FileExistsError:
            pass
    return created


def _move_into_place(source, destination):
    """A file by one rename: the destination holds the old file or the whole
    new one. A folder likewise, by two: where a folder is already, the files
    of the old one that the new one lacks (a user's files beside a
    SavedModel, as a plain write into the folder keeps them) move into the
    new one first, then the old folder is renamed away and the new one into
    its place; a kill between the two leaves none under the final name and
    the old one in .NAME.matex-old-XXXX."""
    if not os.path.isdir(destination):
        os.replace(source, destination)
        return
    if not os.path.isdir(source):  # a file where a folder is: what the plain write would refuse
        raise IsADirectoryError(f"cannot replace the folder {destination} with a file")
    _carry_over(destination, source)
    old = tempfile.mkdtemp(prefix=f".{os.path.basename(destination)}{_OLD}", dir=os.path.dirname(destination))
    os.replace(destination, os.path.join(old, "old"))
    os.replace(source, destination)
    shutil.rmtree(old, ignore_errors=True)


def _carry_over(old, new):
    """The entries of folder `old` that folder `new` lacks, moved into it."""
    for entry in os.listdir(old):
        here, there = os.path.join(old, entry), os.path.join(new, entry)
        if not os.path.lexists(there):
            os.replace(here, there)
        elif os.path.isdir(here) and os.path.isdir(there) and not os.path.islink(here):
            _carry_over(here, there)


def _remove_stale_staging(parent, name):
    """Staging and old folders of `name` left by a rank 0 that died mid-save."""
    prefixes = (f".{name}{_STAGING}", f".{name}{_OLD}")
    for entry in os.listdir(parent):
        if entry.startswith(prefixes):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


# ---- Keras 3 ------------------------------------------------------------------------------------------

def _keeps_prompt(filepath, overwrite):
    """Keras asks before overwriting when overwrite=False: rank 0 asks, on the real path."""
    return not overwrite and _stageable(filepath) and os.path.exists(filepath)


def _make_keras_writer(what):
    """save_model or save_weights of Keras 3, as a function of the model or
    a method (Keras 3.0 has no saving_api.save_weights); their other
    arguments differ between releases and pass through as given."""
    def make(original):
        import inspect
        signature = inspect.signature(original)

        def writer(model, filepath, *args, **kwargs):
            overwrite = signature.bind(model, filepath, *args, **kwargs).arguments.get("overwrite", True)
            return rank0_writes(what, filepath, lambda p: original(model, p, *args, **kwargs),
                                staged=not _keeps_prompt(filepath, overwrite))
        return writer
    return make


def _make_export(original):
    def export(self, filepath, *args, **kwargs):
        # Not staged here: tf.saved_model.save inside stages the SavedModel, and Keras names the real path.
        return rank0_writes("the exported model", filepath, lambda p: original(self, p, *args, **kwargs),
                            staged=False)
    return export


def _make_backup(original):
    def backup(self, *args, **kwargs):
        return rank0_writes("the backup", self.backup_dir, lambda _: original(self, *args, **kwargs), staged=False)
    return backup


def _make_get_file(original):
    import inspect
    signature = inspect.signature(original)

    def get_file(*args, **kwargs):
        if not _shared():
            return original(*args, **kwargs)
        # Rank 0 downloads and extracts; the others then take the file from the cache as it is.
        bound = signature.bind(*args, **kwargs)
        name = bound.arguments.get("fname") or bound.arguments.get("origin") or "a file"
        result = rank0_writes("the download", name, lambda _: original(*args, **kwargs), staged=False)
        if _runtime.rank() == 0:
            return result
        bound.arguments["force_download"] = False
        # No second extraction over the files rank 0 reads, and nothing in it agrees with anyone.
        with _scope.setting("not_writer", True), _scope.setting("skipping", True):
            return original(*bound.args, **bound.kwargs)
    return get_file


def _make_extract_archive(original):
    def extract_archive(*args, **kwargs):
        if _scope.flag("not_writer"):
            return True  # rank 0 extracted it
        return original(*args, **kwargs)
    return extract_archive


def _make_skipped_by_non_writers(original):
    """A file operation that belongs to a write rank 0 makes (ModelCheckpoint's
    folder, a CheckpointManager's state file and its sweep of old
    checkpoints): skipped on the other ranks, which run the rest of the call."""
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
        options = _synchronous(options)

        def write(prefix):
            return original(self, prefix, options=options)

        def elsewhere():
            prefix = _prefix_text(file_prefix)
            if options is not None and options.experimental_write_callbacks:
                with _scope.setting("not_writer", True):
                    checkpoint_module._execute_callbacks(options.experimental_write_callbacks, prefix)
            return prefix
        return rank0_writes("the checkpoint", file_prefix, write, staged=False, elsewhere=elsewhere)
    return _write


def _synchronous(options):
    """Checkpoint options without async writing (2+ ranks): the ranks return
    once the file is complete, and a background thread's write would meet
    its agreement on one rank only."""
    if _runtime.size() == 1 or options is None or not options.experimental_enable_async_checkpoint:
        return options
    import copy
    options = copy.copy(options)
    options.experimental_enable_async_checkpoint = False
    return options


def _make_checkpoint_save(original):
    def save(self, file_prefix, options=None):
        return original(self, file_prefix, options=_synchronous(options))
    return save


def _make_saved_model_save(original):
    def save(obj, export_dir, *args, **kwargs):
        return rank0_writes("the SavedModel", export_dir, lambda p: original(obj, p, *args, **kwargs),
                            make_parents=True)
    return save


def _make_create_file_writer(original):
    def create_file_writer(*args, **kwargs):
        if _runtime.size() > 1 and _runtime.rank() != 0:
            return tf.summary.create_noop_writer()
        return original(*args, **kwargs)
    return create_file_writer


# ---- tf_keras -----------------------------------------------------------------------------------------

def _make_tf_keras_writer(original):
    import inspect
    signature = inspect.signature(original)
    what = "the model" if original.__name__ == "save" else "the weights"

    def writer(self, filepath, *args, **kwargs):
        overwrite = signature.bind(self, filepath, *args, **kwargs).arguments.get("overwrite", True)
        prompts = _keeps_prompt(filepath, overwrite) or (_stageable(filepath) and not overwrite and
                                                          os.path.exists(f"{os.fspath(filepath)}.index"))
        return rank0_writes(what, filepath, lambda p: original(self, p, *args, **kwargs), staged=not prompts)
    return writer


def apply_tf_keras(patch):
    import tf_keras
    from tf_keras.src import callbacks
    for writer in ("save", "save_weights"):
        patch(tf_keras.Model, writer, _make_tf_keras_writer)
    patch(callbacks.ModelCheckpoint, "_save_model", _make_model_checkpoint_save)


# ---- applying -----------------------------------------------------------------------------------------

def apply_all(patch):
    import keras
    from keras.src.callbacks import model_checkpoint
    from keras.src.saving import saving_api
    from keras.src.utils import file_utils
    from tensorflow.python.checkpoint import checkpoint as checkpoint_module
    from tensorflow.python.checkpoint import checkpoint_management
    from tensorflow.python.lib.io import file_io
    from tensorflow.python.ops import summary_ops_v2
    from tensorflow.python.saved_model import save as saved_model_save

    backup_and_restore = _keras_compat.backup_and_restore_module()
    replaced = {}
    patch_everywhere(patch, saving_api, "save_model", _make_keras_writer("the model"), replaced)
    patch_everywhere(patch, _keras_compat.save_weights_owner(), "save_weights", _make_keras_writer("the weights"),
                     replaced)
    patch(keras.Model, "export", _make_export)
    patch(backup_and_restore.BackupAndRestore, "_save_model", _make_backup)
    patch(backup_and_restore.BackupAndRestore, "on_train_end", _make_backup)
    patch_everywhere(patch, file_utils, "get_file", _make_get_file, replaced)
    patch_everywhere(patch, file_utils, "extract_archive", _make_extract_archive, replaced)
    patch(model_checkpoint.ModelCheckpoint, "_save_model", _make_model_checkpoint_save)
    patch_everywhere(patch, file_utils, "makedirs", _make_skipped_by_non_writers, replaced)
    patch_everywhere(patch, file_io, "recursive_create_dir_v2", _make_skipped_by_non_writers, replaced)
    patch(checkpoint_module.Checkpoint, "_write", _make_checkpoint_write)
    patch(checkpoint_module.Checkpoint, "save", _make_checkpoint_save)
    for helper in ("update_checkpoint_state_internal", "_delete_file_if_exists"):
        patch_everywhere(patch, checkpoint_management, helper, _make_skipped_by_non_writers, replaced)
    patch_everywhere(patch, saved_model_save, "save", _make_saved_model_save, replaced)
    patch_everywhere(patch, summary_ops_v2, "create_file_writer_v2", _make_create_file_writer, replaced)
    rebind(replaced)
