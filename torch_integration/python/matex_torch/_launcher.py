"""What the launcher tells a process: rank and world size from mpirun
(OMPI_COMM_WORLD_*), MPICH/Intel MPI (PMI_*) or srun (SLURM_*), so that a
script needs no RANK, WORLD_SIZE, MASTER_ADDR or MASTER_PORT of its own. The
address and port of the TCP store are agreed over MPI: rank 0's host and a
port free there."""
import os

_RANK_SOURCES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", None),
)


def launcher_ranks():
    """(rank, size, local rank, local size) from an MPI launcher, or None."""
    for rank, size, local_rank, local_size in _RANK_SOURCES:
        if rank in os.environ and size in os.environ:
            local = os.environ.get(local_rank, "0")
            local_n = os.environ.get(local_size, "") if local_size else ""
            return int(os.environ[rank]), int(os.environ[size]), int(local), int(local_n) if local_n else None
    return None


def export_ranks():
    """Sets RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE from an MPI
    launcher where they are unset (cheap: no MPI). False without one."""
    ranks = launcher_ranks()
    if ranks is None:
        return False
    rank, size, local_rank, local_size = ranks
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(size))
    os.environ.setdefault("LOCAL_RANK", str(local_rank))
    if local_size is not None:
        os.environ.setdefault("LOCAL_WORLD_SIZE", str(local_size))
    return True


_LOOPBACK = ("localhost", "127.0.0.1", "::1", "ip6-localhost")


def spans_hosts():
    """Whether the launcher put this job's ranks on more than one host (the
    same answer on every rank: all ranks share one host exactly when each
    host's local size is the world size). None where the launcher does not say."""
    ranks = launcher_ranks()
    if ranks is None or ranks[3] is None:
        return None
    return ranks[3] != ranks[1]


def fill_environment():
    """Sets the env:// variables a launcher did not. Only under an MPI
    launcher, and only the missing ones; MASTER_ADDR/PORT need MPI, so this
    starts it. A loopback MASTER_ADDR (a single-machine script's default,
    e.g. setdefault("MASTER_ADDR", "localhost")) cannot reach rank 0 from
    another host: across hosts it is replaced by rank 0's address, keeping
    the port."""
    if not export_ranks():
        return False
    if os.environ.get("MASTER_ADDR", "").strip().lower() in _LOOPBACK and spans_hosts():
        import sys
        from . import _native
        address, _ = _native.extension().agree_rendezvous()
        if int(os.environ["RANK"]) == 0:
            print(f"matex: MASTER_ADDR={os.environ['MASTER_ADDR']} cannot reach rank 0 from the job's other hosts; "
                  f"using rank 0's address {address} instead", file=sys.stderr, flush=True)
        os.environ["MASTER_ADDR"] = address
    if "MASTER_ADDR" not in os.environ and "MASTER_PORT" not in os.environ:
        from . import _native
        world_rank, world_size = _native.extension().world()
        if (world_rank, world_size) != (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])):
            raise RuntimeError(
                f"matex: the launcher says rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']} but MPI says rank "
                f"{world_rank} of {world_size}: this process was not started as an MPI rank (srun without PMI, or "
                f"another MPI than the one matex was built with). Set MASTER_ADDR and MASTER_PORT yourself, or "
                f"launch with this MPI's mpirun.")
        address, port = _native.extension().agree_rendezvous()
        os.environ["MASTER_ADDR"] = address
        os.environ["MASTER_PORT"] = str(port)
    return True


def install_env_rendezvous():
    """Wraps torch's env:// rendezvous so that, under mpirun or srun, missing
    variables are filled first. Without an MPI launcher it changes nothing."""
    import importlib
    # (torch.distributed.rendezvous is also the name of a function there.)
    handlers = importlib.import_module("torch.distributed.rendezvous")._rendezvous_handlers
    original = handlers.get("env")
    if original is None or getattr(original, "_matex_wrapped", False):
        return

    def env_rendezvous(url, **kwargs):
        fill_environment()
        return original(url, **kwargs)

    env_rendezvous._matex_wrapped = True
    handlers["env"] = env_rendezvous


def check_world(group_rank, group_size, world_rank, world_size, global_ranks):
    """The default group must be MPI_COMM_WORLD, rank for rank."""
    if global_ranks:
        return
    if world_size == 1 and group_size > 1:
        raise RuntimeError(
            f"matex: this process is rank {group_rank} of {group_size} for torch.distributed, but MPI sees a "
            f"world of one process: it was not started by an MPI launcher. Launch with "
            f"`mpirun -np {group_size} python script.py` (or srun); torchrun and mp.spawn start processes that MPI "
            f"does not know.")
    if (group_rank, group_size) != (world_rank, world_size):
        raise RuntimeError(
            f"matex: torch.distributed counts rank {group_rank} of {group_size} but MPI counts rank {world_rank} "
            f"of {world_size}; with matex, RANK and WORLD_SIZE must be the MPI launcher's (unset them to take "
            f"mpirun's)")
