"""matex.data: readers that give a tf.data.Dataset of global batches and, under
MATEX_ENABLE=1, read only this rank's rows of each.

    import matex.data as md
    train = md.rows(md.hdf5("train.h5", "images"), md.hdf5("train.h5", "labels"),
                    batch_size=256, shuffle=True, seed=0)
    model.fit(train, epochs=3)

Sources: md.npy (memory-mapped .npy), md.hdf5 (h5py), md.netcdf (netCDF4)
and md.csv (a row-offset index built once, on rank 0, and broadcast). All
sources of one md.rows must have the same number of rows; each element is a
tuple of their rows (one source: its rows alone; keywords: a dict).

Order: the k-th pass over the dataset (each new iterator; fit starts one
per epoch) puts the rows in the order of a permutation drawn from the seed
and k, with tf.random.experimental.index_shuffle (and TensorFlow's global
seed, when the script sets one): the same at any rank count, so the loss
curve is the same for any N, one process included. Global batch g holds
positions [g*B, (g+1)*B) of that order.

Under MATEX_ENABLE=1, fit, evaluate and predict cut each global batch's
index list before the read (matex/_input_plan.py), so rank r reads rows
[b*r//N, b*(r+1)//N) of a global batch of b rows and nothing else. A custom
loop reads whole batches until it trains, then the same rows
(matex/_loop_plan.py); on one process every batch is read whole. Reads are plain file reads on
every rank (no MPI-IO): parallel HDF5 and PnetCDF are not used.

Each source counts the rows it has read (`rows_read`), for tests and checks.
"""
import os
import threading
import weakref

import numpy as np
import tensorflow as tf

__all__ = ["rows", "npy", "hdf5", "netcdf", "csv"]


class RowSource:
    """A random-access table of rows: __len__, row_shape, dtype, read(rows)
    for sorted, distinct row indices."""

    def __init__(self, path, field):
        if not os.path.exists(path):
            raise FileNotFoundError(f"matex.data: {path}: no such file")
        self.path, self.field = path, field
        self.rows_read = 0
        self._lock = threading.Lock()

    def describe(self):
        return f"{self.path}" + (f" [{self.field}]" if self.field else "")

    def read(self, rows):
        with self._lock:
            self.rows_read += len(rows)
            return np.asarray(self._read(rows), dtype=self.dtype)


class _Npy(RowSource):
    def __init__(self, path):
        super().__init__(path, None)
        try:
            self._array = np.load(path, mmap_mode="r")
        except ValueError as error:
            raise ValueError(f"matex.data: {path}: not a .npy array ({error})") from None
        if self._array.ndim == 0:
            raise ValueError(f"matex.data: {path}: a scalar has no rows")
        self.dtype, self.row_shape = self._array.dtype, self._array.shape[1:]

    def __len__(self):
        return self._array.shape[0]

    def _read(self, rows):
        return self._array[rows]  # only those pages are touched


class _Field(RowSource):
    """A named array of a file (an HDF5 dataset, a NetCDF variable), read along its first axis."""
    KIND = ""

    def __init__(self, path, name):
        super().__init__(path, name)
        try:
            self._file, fields = self._open(path)
        except OSError as error:
            raise OSError(f"matex.data: {path}: not readable as {self.KIND} ({error})") from None
        if name not in fields:
            raise KeyError(f"matex.data: {path}: no {self.WHAT} '{name}' (it has {sorted(fields)})")
        weakref.finalize(self, self._file.close)  # closed with the source
        self._array = fields[name]
        if self._array.ndim == 0:
            raise ValueError(f"matex.data: {path} [{name}]: a scalar has no rows")
        self.dtype, self.row_shape = np.dtype(self._array.dtype), tuple(self._array.shape[1:])

    def __len__(self):
        return self._array.shape[0]

    def _read(self, rows):
        return self._array[rows] if len(rows) else np.zeros((0,) + self.row_shape, self.dtype)


class _Hdf5(_Field):
    KIND, WHAT = "HDF5", "dataset"

    def _open(self, path):
        import h5py
        f = h5py.File(path, "r")
        return f, f


class _NetCdf(_Field):
    KIND, WHAT = "NetCDF", "variable"

    def _open(self, path):
        import netCDF4
        f = netCDF4.Dataset(path, "r")
        f.set_auto_mask(False)
        return f, f.variables


class _Csv(RowSource):
    """A CSV file of numbers, one row per line (an optional header line and
    blank lines skipped); the byte offset and the number of every data line
    are indexed once."""

    def __init__(self, path, columns=None, dtype="float32", header=False, delimiter=","):
        super().__init__(path, None)
        self.dtype, self._delimiter = np.dtype(dtype), delimiter.encode()
        self._offsets, self._lines = _line_index(path, header)
        width = len(self._fields_at(0)) if len(self._offsets) else 0
        self._columns = list(columns) if columns is not None else list(range(width))
        bad = [c for c in self._columns if not 0 <= c < width]
        if bad:
            raise ValueError(f"matex.data: {path}: no column {bad[0]} (line {self._line(0)} has {width})")
        self._width, self.row_shape = width, (len(self._columns),)

    def __len__(self):
        return len(self._offsets)

    def _line(self, row):
        return int(self._lines[row])

    def _fields_at(self, row, f=None):
        if f is None:
            with open(self.path, "rb") as opened:
                return self._fields_at(row, opened)
        f.seek(int(self._offsets[row]))
        return f.readline().rstrip(b"\r\n").split(self._delimiter)

    def _read(self, rows):
        out = np.empty((len(rows), len(self._columns)), self.dtype)
        with open(self.path, "rb") as f:
            for i, row in enumerate(rows):
                fields = self._fields_at(row, f)
                if len(fields) != self._width:
                    raise ValueError(f"matex.data: {self.path}: line {self._line(row)} has {len(fields)} fields, "
                                     f"the first row {self._width}")
                try:
                    out[i] = [float(fields[c]) for c in self._columns]
                except ValueError:
                    raise ValueError(f"matex.data: {self.path}: line {self._line(row)}: a field is not a number "
                                     f"({b','.join(fields[:8]).decode(errors='replace')})") from None
        return out


def _index_lines(path, header):
    offsets, lines, at = [], [], 0
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if line.strip():
                offsets.append(at)
                lines.append(number)
            at += len(line)
    skip = 1 if header and offsets else 0
    return np.asarray(offsets[skip:], np.int64), np.asarray(lines[skip:], np.int64)


def _line_index(path, header):
    """The byte offset and the line number of every data line: built by rank 0
    and broadcast under MATEX_ENABLE=1 (one pass over the file in the whole
    job), else here. A failure on rank 0 fails every rank."""
    from . import _runtime
    if not (_runtime.is_initialized() and _runtime.size() > 1):
        return _index_lines(path, header)
    from . import _collectives
    index, failure = None, None
    if _runtime.rank() == 0:
        try:
            index = _index_lines(path, header)
        except OSError as error:
            failure = error
    count = -1 if index is None else len(index[0])
    count = int(_collectives.broadcast(tf.constant([count], tf.int64)).numpy()[0])
    if count < 0:
        if failure is not None:
            raise OSError(f"matex.data: {path}: cannot be indexed ({failure})") from None
        raise OSError(f"matex.data: {path}: rank 0 could not index it (its error says why)")
    both = np.concatenate(index) if index is not None else np.zeros([2 * count], np.int64)
    both = _collectives.broadcast(tf.constant(both)).numpy()
    return both[:count], both[count:]


def npy(path):
    """Rows of a .npy array (memory-mapped: only the rows read are touched)."""
    return _Npy(path)


def hdf5(path, name):
    """Rows of dataset `name` of an HDF5 file (h5py), along its first axis."""
    return _Hdf5(path, name)


def netcdf(path, name):
    """Rows of variable `name` of a NetCDF file (netCDF4), along its first dimension."""
    return _NetCdf(path, name)


def csv(path, columns=None, dtype="float32", header=False, delimiter=","):
    """Rows of a CSV file of numbers: `columns` (indices, default all) of every line."""
    return _Csv(path, columns, dtype, header, delimiter)


def _check_sources(sources):
    """Every rank must see the same rows (count, row shape, dtype) in every
    source (compared across ranks first, so that all ranks raise alike), and
    the sources of one dataset must have the same number of rows."""
    from . import _runtime
    if _runtime.is_initialized() and _runtime.size() > 1:
        from . import _collectives
        values = [d for s in sources for d in (len(s), np.dtype(s.dtype).num, len(s.row_shape)) + tuple(s.row_shape)]
        differs = _collectives.first_difference_from_rank0(values, tf.int64)
        if differs is not None:
            raise ValueError(f"matex.data.rows: rank {differs[0]} sees other shapes than rank 0 for "
                             f"{[s.describe() for s in sources]} (rows, dtype or row shape; they differ at field "
                             f"{differs[1]}): every rank must read the same files")
    lengths = {s.describe(): len(s) for s in sources}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"matex.data.rows: the sources have different numbers of rows: {lengths}")


def rows(*sources, batch_size, shuffle=True, seed=0, drop_remainder=False, **named):
    """A dataset of global batches of the sources' rows (see the module's doc)."""
    if bool(sources) == bool(named):
        raise TypeError("matex.data.rows: give the sources either by position or by name, at least one")
    parts = list(sources) or list(named.values())
    if not all(isinstance(s, RowSource) for s in parts):
        raise TypeError("matex.data.rows: sources must come from md.npy, md.hdf5, md.netcdf or md.csv")
    if int(batch_size) < 1:
        raise ValueError(f"matex.data.rows: batch_size must be at least 1, not {batch_size}")
    _check_sources(parts)
    n, b = len(parts[0]), int(batch_size)
    batches = n // b if drop_remainder else -(-n // b)
    dtypes = [tf.as_dtype(s.dtype) for s in parts]

    def read(index):
        distinct, where = np.unique(index, return_inverse=True)  # sorted, each row once; distinct[where] == index
        return [source.read(distinct)[where] for source in parts]

    def read_rows(index):
        values = tf.numpy_function(read, [index], dtypes, stateful=False)
        values = [tf.ensure_shape(v, [None] + list(s.row_shape)) for v, s in zip(values, parts)]
        if named:
            return dict(zip(named, values))
        return values[0] if len(values) == 1 else tuple(values)

    def index_batch(epoch_seed, g):
        positions = tf.range(g * b, tf.minimum((g + 1) * b, n), dtype=tf.int64)
        if not shuffle:
            return positions
        seeds = tf.stack([tf.cast(seed, tf.int64), epoch_seed])
        return tf.random.experimental.index_shuffle(positions, seeds, tf.cast(n - 1, tf.int64))

    # One draw per pass over the data (an epoch): the same on every rank, for any N.
    epochs = tf.data.Dataset.random(seed=int(seed), rerandomize_each_iteration=True).take(1)
    indices = epochs.flat_map(lambda s: tf.data.Dataset.range(batches).map(lambda g: index_batch(s, g)))
    dataset = indices.map(read_rows)
    dataset._matex_row_reader = True  # the planner cuts its index batches (matex/_input_plan.py)
    return dataset.prefetch(2).apply(tf.data.experimental.assert_cardinality(batches))
