"""HOROVOD_* settings mapped onto matex's (docs/configuration.md, docs/horovod.md).

hvd.init() calls apply() before matex starts: each Horovod setting that
changes behaviour sets the matching MATEX_* variable, which libmatexcomm's
table then validates. A MATEX_* variable the user set already wins; one set
to a different value than its Horovod twin is an error naming both. Settings
that matex's design makes moot are accepted and said so at debug level;
settings that would change behaviour in a way matex cannot follow are
refused, naming them.
"""
import os
import sys

from .refusals import refuse


def _seconds(value):
    return str(float(value))


def _cycle_ms(value):
    # Horovod's cycle time is a float in milliseconds; matex's an integer (at least 1 when not 0).
    ms = float(value)
    return "0" if ms <= 0 else str(max(1, round(ms)))


# Horovod name -> (matex name, conversion of the value).
MAPPED = {
    "HOROVOD_FUSION_THRESHOLD": ("MATEX_FUSION_BYTES", lambda v: str(int(float(v)))),
    "HOROVOD_CYCLE_TIME": ("MATEX_CYCLE_MS", _cycle_ms),
    "HOROVOD_TIMELINE": ("MATEX_TIMELINE", str),
    "HOROVOD_STALL_CHECK_TIME_SECONDS": ("MATEX_STALL_WARNING_SECONDS", _seconds),
    "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": ("MATEX_STALL_SHUTDOWN_SECONDS", _seconds),
    "HOROVOD_LOG_LEVEL": ("MATEX_LOG_LEVEL", lambda v: {"trace": "debug", "debug": "debug", "info": "info",
                                                       "warning": "warn", "error": "error",
                                                       "fatal": "error"}.get(v.strip().lower(), v)),
}

# Accepted and without effect: matex already does what they ask, or they only tune Horovod's own machinery.
MOOT = {
    "HOROVOD_HIERARCHICAL_ALLREDUCE": "matex's allreduce is hierarchical across nodes already",
    "HOROVOD_HIERARCHICAL_ALLGATHER": "matex's allgather chooses its own algorithm",
    "HOROVOD_CACHE_CAPACITY": "matex's engine caches every agreed tensor name",
    "HOROVOD_TIMELINE_MARK_CYCLES": "matex's timeline has no cycle marks",
    "HOROVOD_MPI_THREADS_DISABLE": "matex's engine needs MPI_THREAD_MULTIPLE",
    "HOROVOD_GPU_OPERATIONS": "matex picks NCCL or MPI for GPU tensors itself",
    "HOROVOD_GPU_ALLREDUCE": "matex picks NCCL or MPI for GPU tensors itself",
    "HOROVOD_GPU_BROADCAST": "matex picks NCCL or MPI for GPU tensors itself",
    "HOROVOD_GPU_ALLGATHER": "matex picks NCCL or MPI for GPU tensors itself",
    "HOROVOD_CPU_OPERATIONS": "matex always runs CPU tensors on its own MPI and shared-memory algorithms",
    "HOROVOD_CONTROLLER": "matex's controller is MPI",
    "HOROVOD_NUM_NCCL_STREAMS": "matex manages its own CUDA streams",
    "HOROVOD_BATCH_D2D_MEMCOPIES": "matex packs GPU tensors with its own kernels",
    "HOROVOD_ENABLE_ASYNC_COMPLETION": "matex's engine always completes asynchronously",
    "HOROVOD_DISABLE_GROUP_FUSION": "matex fuses by dtype and size, across groups",
    "HOROVOD_HOSTNAME": "matex learns hosts from MPI",
    "HOROVOD_RANK": "the MPI launcher gives the rank",
    "HOROVOD_SIZE": "the MPI launcher gives the size",
    "HOROVOD_LOCAL_RANK": "matex computes it from the topology",
    "HOROVOD_LOCAL_SIZE": "matex computes it from the topology",
    "HOROVOD_CROSS_RANK": "matex computes it from the topology",
    "HOROVOD_CROSS_SIZE": "matex computes it from the topology",
}

# Their Horovod meaning changes results or how the job runs, and matex cannot follow it.
REFUSED = {
    "HOROVOD_AUTOTUNE": "matex tunes its algorithms with matex-tune (docs/tuning.md), not at run time",
    "HOROVOD_ELASTIC": "elastic training is not served",
    "HOROVOD_GLOO_RENDEZVOUS_ADDR": "matex runs under MPI only (mpirun, srun or horovodrun --mpi)",
    "HOROVOD_ADASUM_MPI_CHUNK_SIZE": "Adasum is not served",
}


def _truthy(value):
    return value.strip().lower() in ("1", "true", "yes", "on")


def _same(given, wanted):
    """Whether a MATEX_* value the user set means what a HOROVOD_* one asks for (30 and 30.0, WARN and warn)."""
    given, wanted = given.strip(), wanted.strip()
    try:
        return float(given) == float(wanted)
    except ValueError:
        return given.lower() == wanted.lower()


def apply(environ=None):
    """Maps the HOROVOD_* settings in `environ` (os.environ) onto MATEX_*.
    Returns the list of MATEX_* names it set."""
    environ = os.environ if environ is None else environ
    if _truthy(environ.get("HOROVOD_STALL_CHECK_DISABLE", "")) and "HOROVOD_STALL_CHECK_TIME_SECONDS" in environ:
        raise ValueError("horovod: HOROVOD_STALL_CHECK_DISABLE=1 and HOROVOD_STALL_CHECK_TIME_SECONDS are both set; "
                         "unset one")
    wanted = {}
    for name, (matex_name, convert) in MAPPED.items():
        if name in environ and environ[name].strip():
            try:
                wanted[matex_name] = (name, convert(environ[name]))
            except ValueError:
                raise ValueError(f"horovod: {name}={environ[name]!r} is not a valid value") from None
    if _truthy(environ.get("HOROVOD_STALL_CHECK_DISABLE", "")):
        wanted["MATEX_STALL_WARNING_SECONDS"] = ("HOROVOD_STALL_CHECK_DISABLE", "1000000")  # the table's highest
    for name, why in REFUSED.items():
        if environ.get(name, "").strip() and (name != "HOROVOD_AUTOTUNE" or _truthy(environ[name])):
            refuse(f"the setting {name}", why)
    if "MATEX_STALL_SHUTDOWN_SECONDS" not in wanted and not environ.get("MATEX_STALL_SHUTDOWN_SECONDS", "").strip():
        # Horovod waits forever for a tensor that some ranks never submit (its stall shutdown is off by
        # default); matex gives up after MATEX_TIMEOUT_SECONDS, as its blocking collectives do, and names
        # the ranks that never submitted it.
        wanted["MATEX_STALL_SHUTDOWN_SECONDS"] = ("MATEX_TIMEOUT_SECONDS",
                                                  environ.get("MATEX_TIMEOUT_SECONDS", "").strip() or "600")
    set_now = []
    for matex_name, (name, value) in wanted.items():
        mine = environ.get(matex_name)
        if mine is not None and mine.strip() and not _same(mine, value):
            raise ValueError(f"horovod: {name} asks for {matex_name}={value}, but {matex_name}={mine} is set; "
                             "unset one of them")
        if mine is None or not mine.strip():
            environ[matex_name] = value
            set_now.append(matex_name)
    unknown = sorted(n for n in environ if n.startswith("HOROVOD_") and n not in MAPPED and n not in MOOT
                     and n not in REFUSED and n != "HOROVOD_STALL_CHECK_DISABLE")
    if unknown and environ is os.environ:
        sys.stderr.write(f"horovod (served by matex): ignoring {', '.join(unknown)}: matex has no such setting "
                         "(docs/horovod.md)\n")
    return set_now
