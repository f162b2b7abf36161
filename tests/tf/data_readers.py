"""matex.data's readers (npy, HDF5, NetCDF, CSV) under MATEX_ENABLE=1, on
small files this test writes (rank 0, in a directory every rank sees).

For each reader, with 103 rows in batches of 16 (a last batch of 7):
- predict through an identity model returns every row, each once, in the
  order a plain first pass over a dataset with the same seed gives (whole
  global batches, read outside fit), on every rank; a second pass (the next
  epoch) has another order;
- the source read, during predict, only this rank's rows of each global batch
  ([b*r//N, b*(r+1)//N) of a batch of b rows), counted by the source;
- the order depends on the seed and the epoch only, not on the rank count (a
  plain pass reads every row on this rank as one process would); another
  seed gives another order; shuffle=False gives the file's order.
A custom loop that trains over a reader gets this rank's rows of each batch
after its first, and reads little more than those (batches of 4: 26 of them).
Bad input, each with its message naming the file and the field: a missing
file, a missing variable (HDF5 and NetCDF), a ragged CSV row, sources of
different lengths, and a file whose shape differs on one rank.
Run: MATEX_ENABLE=1 mpirun -np N python tests/tf/data_readers.py
"""
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
import keras

import matex
import matex.data as md

ROWS, BATCH, WIDTH = 103, 16, 3
rank, size = matex.rank(), matex.size()
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)


def shared_directory():
    """Rank 0's temporary directory, named to every rank (one machine here)."""
    name = tempfile.mkdtemp(prefix="matex-readers-") if rank == 0 else ""
    codes = np.frombuffer(name.encode().ljust(256, b"\0"), np.uint8).astype(np.int32)
    codes = matex.broadcast(tf.constant(codes)).numpy()
    return bytes(codes.astype(np.uint8)).rstrip(b"\0").decode()


directory = shared_directory()
table = np.arange(ROWS * WIDTH, dtype="float32").reshape(ROWS, WIDTH)  # row i starts at 3*i: exact, distinct
paths = {kind: os.path.join(directory, f"data.{kind}") for kind in ("npy", "h5", "nc", "csv")}
if rank == 0:
    np.save(paths["npy"], table)
    import h5py
    with h5py.File(paths["h5"], "w") as f:
        f["x"] = table
        f["short"] = table[:-1]
    import netCDF4
    with netCDF4.Dataset(paths["nc"], "w") as f:
        f.createDimension("row", ROWS)
        f.createDimension("col", WIDTH)
        f.createVariable("x", "f4", ("row", "col"))[:] = table
    with open(paths["csv"], "w") as out:
        out.write("a,b,c\n")
        out.writelines(",".join(str(int(v)) for v in row) + "\n" for row in table)
    with open(os.path.join(directory, "ragged.csv"), "w") as out:
        out.write("1,2,3\n4,5,6\n7,8\n")
matex.allreduce(tf.zeros([1]))  # the files exist before any rank opens them

sources = {"npy": lambda: md.npy(paths["npy"]), "hdf5": lambda: md.hdf5(paths["h5"], "x"),
           "netcdf": lambda: md.netcdf(paths["nc"], "x"), "csv": lambda: md.csv(paths["csv"], header=True)}
model = keras.Sequential([keras.Input((WIDTH,)), keras.layers.Identity()])


def my_share(rows_in_batches):
    return sum(b * (rank + 1) // size - b * rank // size for b in rows_in_batches)


batch_rows = [min(BATCH, ROWS - start) for start in range(0, ROWS, BATCH)]
for kind, make in sources.items():
    source = make()
    dataset = md.rows(source, batch_size=BATCH, seed=4)
    predicted = model.predict(dataset, verbose=0)
    read_in_predict = source.rows_read
    # Plain passes (whole global batches) over a fresh dataset with the same seed: its first pass is
    # epoch 0, as predict's was; its second, epoch 1, has another order.
    fresh = md.rows(make(), batch_size=BATCH, seed=4)
    epoch0, epoch1 = (np.concatenate([b.numpy() for b in fresh]) for _ in range(2))
    other = np.concatenate([b.numpy() for b in md.rows(make(), batch_size=BATCH, seed=5)])
    for name, rows in (("epoch 0", epoch0), ("epoch 1", epoch1)):
        expect(np.array_equal(np.sort(rows[:, 0]), table[:, 0]), f"{kind}: {name} is not every row once")
    expect(not np.array_equal(epoch0[:, 0], table[:, 0]), f"{kind}: shuffle=True left the rows in file order")
    expect(np.array_equal(predicted, epoch0), f"{kind}: predict's rows differ from a plain pass's")
    expect(not np.array_equal(epoch0, epoch1), f"{kind}: the second epoch repeats the first's order")
    expect(not np.array_equal(epoch0, other), f"{kind}: another seed gave the same order")
    expect(read_in_predict == my_share(batch_rows),
           f"{kind}: rank {rank} read {read_in_predict} rows in predict, its share is {my_share(batch_rows)}")
    print(f"rank {rank}/{size} {kind}: read {read_in_predict} of {ROWS} rows in predict", flush=True)

# A custom loop over a reader: whole batches until it trains (its second batch on), then this rank's
# share of each, read as such once tf.data's buffers hold only batches started after the switch.
source = sources["npy"]()
variable, optimizer = tf.Variable(0.0), keras.optimizers.SGD(0.0)
reference = [b.numpy() for b in md.rows(sources["npy"](), batch_size=4, seed=6)]  # a plain first pass
for k, batch in enumerate(md.rows(source, batch_size=4, seed=6)):
    want = reference[k] if k == 0 else reference[k][len(reference[k]) * rank // size:
                                                   len(reference[k]) * (rank + 1) // size]
    expect(np.array_equal(batch.numpy(), want), f"custom loop: batch {k} is not this rank's rows")
    optimizer.apply_gradients([(tf.zeros([]), variable)])
share = my_share([len(b) for b in reference])
most = share + (ROWS - share) // 2 if size > 1 else ROWS
expect(share <= source.rows_read <= most, f"custom loop: read {source.rows_read} rows, expected {share} to {most}")
print(f"rank {rank}/{size} custom loop: read {source.rows_read} of {ROWS} rows (share {share})", flush=True)

unshuffled = np.concatenate([b.numpy() for b in md.rows(md.npy(paths["npy"]), batch_size=BATCH, shuffle=False)])
expect(np.array_equal(unshuffled, table), "shuffle=False does not give the file's order")


def expect_error(what, build, *words):
    try:
        dataset = build()
        for _ in dataset:
            pass
    except Exception as error:  # noqa: BLE001 - the message is what is checked
        text = str(error)
        expect(all(w in text for w in words), f"{what}: message {text[:300]!r} lacks {words}")
        return
    failures.append(f"{what}: no error")


expect_error("missing file", lambda: md.npy(os.path.join(directory, "none.npy")), "none.npy", "no such file")
expect_error("missing HDF5 dataset", lambda: md.hdf5(paths["h5"], "y"), "data.h5", "'y'")
expect_error("missing NetCDF variable", lambda: md.netcdf(paths["nc"], "y"), "data.nc", "'y'")
expect_error("ragged CSV row", lambda: md.rows(md.csv(os.path.join(directory, "ragged.csv")), batch_size=4,
                                               shuffle=False), "ragged.csv", "line 3")
expect_error("sources of different lengths", lambda: md.rows(md.hdf5(paths["h5"], "x"),
                                                             md.hdf5(paths["h5"], "short"), batch_size=4),
             "different numbers of rows", "short")
mine = os.path.join(directory, f"rank{rank}.npy")
np.save(mine, table if rank != size - 1 or size == 1 else table[:, :2])  # the last rank's file is narrower
if size > 1:
    expect_error("a shape differing between ranks", lambda: md.rows(md.npy(mine), batch_size=4),
                 f"rank {size - 1}", "shapes")

matex.allreduce(tf.zeros([1]))
if rank == 0:
    import shutil
    shutil.rmtree(directory)
if failures:
    print(f"rank {rank}: " + "; ".join(failures), file=sys.stderr, flush=True)
    sys.exit(1)
print(f"rank {rank}: readers as expected", flush=True)
