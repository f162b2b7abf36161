"""The thread budget under MATEX_ENABLE=1 (matex/_threads.py), launched with
--bind-to none so that every rank starts on every CPU of the machine.

Checked on every rank, against what the machine has (os.cpu_count) and what
the other ranks got (one allgather of each rank's CPU bitmap):
- each rank runs on a non-empty subset of the machine's CPUs, every thread of
  the process included;
- with no more ranks on the machine than CPUs, the blocks are disjoint and
  together cover every CPU; with more, every CPU is used and no rank has more
  than one;
- TensorFlow's intra-op pool is sized to the block's physical cores (read from
  sysfs), its inter-op pool to 1 (2 above 4 cores), unless
  TF_NUM_INTRAOP_THREADS is set, which wins;
- OMP_NUM_THREADS defaults to the rank's share;
- MATEX_THREADS=off leaves every CPU to every rank and TensorFlow's defaults.
Run: MATEX_ENABLE=1 mpirun -np N --bind-to none python tests/tf/thread_budget.py
"""
import os
import sys

import numpy as np
import tensorflow as tf

import matex

rank, size = matex.rank(), matex.size()
machine = os.cpu_count()
mine = sorted(os.sched_getaffinity(0))
setting = os.environ.get("MATEX_THREADS", "auto")
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)


def physical_cores(cpus):
    """Distinct (package, core) pairs of the CPUs, from sysfs (each CPU its own core where it is not readable)."""
    found = set()
    for cpu in cpus:
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(base + "physical_package_id") as p, open(base + "core_id") as c:
                found.add((p.read().strip(), c.read().strip()))
        except OSError:
            found.add(("cpu", str(cpu)))
    return len(found)


bitmap = np.zeros([1, machine], np.int32)
bitmap[0, mine] = 1
everyone = matex.allgather(tf.constant(bitmap)).numpy()
threads = {int(t): sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
intra = tf.config.threading.get_intra_op_parallelism_threads()
inter = tf.config.threading.get_inter_op_parallelism_threads()

expect(mine and set(mine) <= set(range(machine)), f"CPUs {mine} outside the machine's {machine}")
expect(all(t == mine for t in threads.values()), f"threads on other CPUs than the rank's {mine}: {threads}")
if setting == "off":
    expect(len(mine) == machine, f"MATEX_THREADS=off: rank runs on {mine}, not every CPU")
    expect(intra == 0 and inter == 0, f"MATEX_THREADS=off: TensorFlow pools set to {intra}/{inter}")
else:
    counts = everyone.sum(axis=0)
    if size <= machine:
        expect((counts == 1).all(), f"blocks not disjoint and covering: CPU use counts {counts.tolist()}")
    else:
        expect((counts >= 1).all() and (everyone.sum(axis=1) == 1).all(),
               f"more ranks than CPUs: blocks {everyone.tolist()}")
    cores = physical_cores(mine)
    if "TF_NUM_INTRAOP_THREADS" in os.environ:
        expect(intra == 0, f"TF_NUM_INTRAOP_THREADS is set, yet matex set the pool to {intra}")
    elif size <= machine:
        expect(intra == cores, f"intra-op pool {intra}, block of {cores} cores ({mine})")
    expect(inter == (1 if cores <= 4 else 2), f"inter-op pool {inter} for a block of {cores} cores")
    share = max(1, machine // size) if size <= machine else 1
    expect(os.environ.get("OMP_NUM_THREADS") == str(share),
           f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, expected the share {share}")

print(f"rank {rank}/{size}: CPUs {mine}, intra {intra}, inter {inter}, OMP {os.environ.get('OMP_NUM_THREADS')}",
      flush=True)
if failures:
    print(f"rank {rank}: " + "; ".join(failures), file=sys.stderr, flush=True)
    sys.exit(1)
