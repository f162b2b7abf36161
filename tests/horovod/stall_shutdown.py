"""HOROVOD_STALL_SHUTDOWN_TIME_SECONDS as Horovod defines it: a tensor that
some ranks never submit fails on the ranks that did, once the limit has
passed, naming the ranks that are missing; the job goes on afterwards.

The stall is made on purpose and is the only thing the limit can catch: the
ranks first meet outside the engine (files in the output folder, so that
however far apart a busy machine brought them, hvd.init()'s own gather
starts together), then rank 0 alone submits a tensor while the others wait
for a file that rank 0 writes once its error came. Then every rank reduces
one more tensor, which must succeed. Run under mpirun with MATEX_HOROVOD=1
and the limit in the environment (tests/horovod/CMakeLists.txt).
Usage: stall_shutdown.py torch|tf OUTPUT_FOLDER"""
import os
import sys
import time

import numpy as np

from hvd_test_util import check_equal, expect_error, rank_input

framework, out_dir = sys.argv[1], sys.argv[2]
if framework == "torch":
    import torch

    import horovod.torch as hvd
    tensor = lambda a: torch.tensor(np.asarray(a), dtype=torch.float32)  # noqa: E731
elif framework == "tf":
    import tensorflow as tf

    import horovod.tensorflow as hvd
    tensor = lambda a: tf.constant(np.asarray(a), dtype=tf.float32)  # noqa: E731
else:
    raise SystemExit(f"stall_shutdown.py: the framework is torch or tf, not {framework!r}")
assert "matex_horovod" in hvd.__file__, f"imported {hvd.__file__}, not matex's horovod"
limit = float(os.environ["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"])


def job_token():
    """The same on every rank of one local mpirun, its parent, and no earlier one's: its process id and
    start time (a process id alone comes back once the kernel wraps around)."""
    with open(f"/proc/{os.getppid()}/stat") as stat:
        started = stat.read().rsplit(")", 1)[1].split()[19]  # field 22, counted from the state (field 3)
    return f"job{os.getppid()}-{started}"


job = job_token()


def wait_for_files(paths, what):
    """Polls, sleeping, until every path exists (10 minutes at most: ctest's limit ends a hang first)."""
    deadline, pause = time.monotonic() + 600, 0.01
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            raise SystemExit(f"stall_shutdown.py: gave up waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def touch(name):
    with open(os.path.join(out_dir, f"{job}.{name}"), "w"):
        pass


# Meet before hvd.init(), whose gather the limit covers too.
world_rank, world_size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
touch(f"ready.{world_rank}")
wait_for_files([os.path.join(out_dir, f"{job}.ready.{r}") for r in range(world_size)], "every rank to start")
hvd.init()
rank, size = hvd.rank(), hvd.size()
assert (rank, size) == (world_rank, world_size), (rank, size, world_rank, world_size)
assert size > 1, "the stall needs a rank that does not submit"

if rank == 0:
    start = time.monotonic()
    missing = ", ".join(str(r) for r in range(1, size))
    expect_error(lambda: hvd.allreduce(tensor([1.0]), name="stall.alone"), "stall.alone",
                 f"rank(s) {missing} did not submit", "MATEX_STALL_SHUTDOWN_SECONDS")
    waited = time.monotonic() - start
    # The limit runs from the first submission, which came after `start`: the error cannot come sooner.
    assert waited >= limit, f"the stall error came after {waited:.1f} s, before the limit of {limit:g} s"
    print(f"rank 0: the tensor it alone submitted failed after {waited:.1f} s (limit {limit:g} s), naming "
          f"rank(s) {missing}", flush=True)
    touch("alone_failed")
else:
    wait_for_files([os.path.join(out_dir, f"{job}.alone_failed")], "rank 0's stall error")

# The engine serves on after the failed tensor, on every rank.
got = hvd.allreduce(tensor(rank_input(rank, 7)), op=hvd.Sum, name="stall.after")
check_equal(got, np.sum([rank_input(r, 7) for r in range(size)], 0), "the allreduce after the stall")
# Every rank is past both waits once that allreduce completed: the meeting files can go.
os.remove(os.path.join(out_dir, f"{job}.ready.{rank}"))
if rank == 0:
    os.remove(os.path.join(out_dir, f"{job}.alone_failed"))
print(f"rank {rank}: stall shutdown checks passed on {size} ranks ({framework})", flush=True)
