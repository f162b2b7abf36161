"""horovod.tensorflow's process sets (served by matex), on exact inputs
against references every rank computes for every rank:
- static sets (hvd.init(process_sets=[...])) and dynamic ones (add_process_set,
  remove_process_set), their size(), rank() and included(), duplicates and bad
  ranks refused, a rank outside a set refused by name;
- every collective restricted to a set (the even ranks and the odd ranks),
  eagerly and in tf.function, with global root ranks and averages over the
  set's size; the ops' own process_set_id through matex's ops;
- unnamed calls inside sets that run different numbers of them, the
  gradient through a set's allreduce;
- DistributedGradientTape and the Keras DistributedOptimizer over a set:
  members average among themselves, the others keep their own gradients.
Run under mpirun with MATEX_HOROVOD=1 (tests/horovod/CMakeLists.txt)."""
import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
import horovod.tensorflow.keras as hvdk
from hvd_test_util import check_equal, expect_error, rank_input, rows_input

hvd.init()
rank, size = hvd.rank(), hvd.size()
everyone = range(size)
c = lambda a, dtype=tf.float32: tf.constant(np.asarray(a), dtype)  # noqa: E731

# ---- registration ---------------------------------------------------------------------------------------
evens, odds = [r for r in everyone if r % 2 == 0], [r for r in everyone if r % 2 == 1]
first = hvd.ProcessSet([0])
hvd.init(process_sets=[first])  # static: registered on every rank alike
assert first.process_set_id is not None and first.size() == 1 and first.included() == (rank == 0)
if rank == 0:
    check_equal(hvd.allreduce(c([3.0]), process_set=first), [3.0], "a set of one rank")
assert int(hvd.size_op(first.process_set_id)) == 1
assert int(hvd.process_set_included_op(first.process_set_id)) == (1 if rank == 0 else 0)
assert hvd.remove_process_set(first)
even_set = hvd.add_process_set(evens)
odd_set = hvd.add_process_set(hvd.ProcessSet(odds)) if odds else None
mine, members = (even_set, evens) if rank % 2 == 0 else (odd_set, odds)
assert mine.included() and mine.size() == len(members) and mine.rank() == members.index(rank)
expect_error(lambda: hvd.add_process_set(evens), "duplicate process set", kinds=(ValueError,))
expect_error(lambda: hvd.add_process_set([0, size]), f"{[size]} are not", kinds=(ValueError,))
if size > 1:
    other = odd_set if rank % 2 == 0 else even_set
    expect_error(lambda: hvd.allreduce(c([1.0]), process_set=other), f"rank {rank} is not in", kinds=(ValueError,))
    outsider = next(r for r in everyone if r not in members)
    expect_error(lambda: hvd.broadcast(c([1.0]), root_rank=outsider, process_set=mine, name="ps.badroot"),
                 "is not in the process set", kinds=(ValueError,))

# ---- collectives inside a set, eagerly and traced -------------------------------------------------------------
traced_sum = tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum, process_set=mine, name="ps.traced"))
for count in (0, 1, 7, 13):
    inputs = [rank_input(r, count) for r in everyone]
    in_set = [inputs[r] for r in members]
    check_equal(hvd.allreduce(c(inputs[rank]), op=hvd.Sum, process_set=mine), np.sum(in_set, 0),
                f"set sum, count {count}")
    check_equal(traced_sum(c(inputs[rank])), np.sum(in_set, 0), f"set sum in tf.function, count {count}")
    check_equal(hvd.allreduce(c(inputs[rank], tf.float64), process_set=mine),
                np.mean(in_set, 0) if count else np.zeros(0), f"set average, count {count}", rtol=1e-12)
    check_equal(hvd.allreduce(c(inputs[rank] - 6, tf.int32), process_set=mine),
                np.trunc(np.sum(np.array(in_set) - 6, 0) / len(members)), f"set integer average, count {count}")
    reduced = hvd.grouped_allreduce([c(inputs[rank]), c(inputs[rank][:1], tf.float64)], op=hvd.Sum,
                                    process_set=mine)
    check_equal(reduced[1], np.sum(in_set, 0)[:1], f"set grouped allreduce, count {count}")
    gathered = hvd.allgather(c(rows_input(rank, rank + 1, 3)), process_set=mine)  # rank r gives r + 1 rows
    check_equal(gathered, np.concatenate([rows_input(r, r + 1, 3) for r in members]), f"set allgather {count}")
    for root in members:  # global ranks, as Horovod takes them
        check_equal(hvd.broadcast(c(inputs[rank]), root_rank=root, process_set=mine), inputs[root],
                    f"set broadcast from {root}, count {count}")
rows_count = 2 * len(members) + 1  # a row count that does not divide by the set's size
shares = [len(range(i, rows_count, len(members))) for i in range(len(members))]
start = sum(shares[:members.index(rank)])
check_equal(hvd.reducescatter(c(rows_input(rank, rows_count, 2)), op=hvd.Sum, process_set=mine),
            np.sum([rows_input(r, rows_count, 2) for r in members], 0)[start:start + shares[members.index(rank)]],
            "set reducescatter")
place = members.index(rank)
received = hvd.alltoall(c(np.arange(len(members) * 2) + 100 * rank), process_set=mine)
check_equal(received, np.concatenate([np.arange(len(members) * 2)[2 * place:2 * place + 2] + 100 * r
                                      for r in members]), "set alltoall")
assert hvd.broadcast_object({"from": members[-1]} if rank == members[-1] else None, root_rank=members[-1],
                            process_set=mine) == {"from": members[-1]}
assert hvd.allgather_object(rank, process_set=mine) == members
hvd.barrier(process_set=mine)
for _ in range(1 + rank % 2):  # unnamed calls: names match within each set only
    check_equal(hvd.allreduce(c([1.0]), op=hvd.Sum, process_set=mine), [len(members)], "unnamed set calls")
check_equal(hvd.allreduce(c([1.0]), op=hvd.Sum), [size], "an unnamed global call after unequal set calls")
x = tf.Variable([1.0, 2.0])
with tf.GradientTape() as tape:
    total = tf.reduce_sum(hvd.allreduce(x, op=hvd.Sum, process_set=mine))
check_equal(tape.gradient(total, x), [len(members)] * 2, "the gradient of a set's sum")
# Bad input one rank alone gives fails on every rank of the set
expect_error(lambda: hvd.allgather(c(1.0) if rank == members[-1] else c([1.0]), name="ps.scalar",
                                   process_set=mine), "ps.scalar", f"rank {len(members) - 1}",
             kinds=(tf.errors.InvalidArgumentError,))

# ---- the tape and the Keras optimizer over the even ranks: the odd ranks keep their own gradients -------------
w0 = np.array([0.5, -0.25, 0.125])
slope = [rank_input(r, 3, salt=2) for r in everyone]
want = np.mean([slope[r] for r in evens], 0) if rank % 2 == 0 else slope[rank]
v = tf.Variable(w0)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(v * c(slope[rank], tf.float64))
check_equal(hvd.DistributedGradientTape(tape, process_set=even_set).gradient(loss, [v])[0], want,
            "DistributedGradientTape over a process set", rtol=1e-12)
opt = hvdk.DistributedOptimizer(tf.keras.optimizers.SGD(learning_rate=0.5), process_set=even_set)
opt.apply([c(slope[rank], tf.float64)], [v])
check_equal(v, w0 - 0.5 * want, "Keras DistributedOptimizer over a process set", rtol=1e-12)

# ---- removal, and the same ranks again ---------------------------------------------------------------------
assert hvd.remove_process_set(even_set) and even_set.process_set_id is None
expect_error(lambda: hvd.allreduce(c([1.0]), process_set=even_set), "is not registered", kinds=(ValueError,))
again = hvd.add_process_set(evens)
if rank % 2 == 0:
    check_equal(hvd.allreduce(c([1.0]), op=hvd.Sum, process_set=again), [len(evens)], "a set added again")
check_equal(hvd.allreduce(c([2.0]), op=hvd.Sum), [2.0 * size], "the global set after removals")
print(f"rank {rank}: horovod.tensorflow process set checks passed on {size} ranks", flush=True)
