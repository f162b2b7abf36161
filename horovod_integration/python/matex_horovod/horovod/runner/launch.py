"""horovodrun's options as one mpirun command.

`horovodrun -np 4 -H a:2,b:2 python train.py` runs
`mpirun -np 4 --host a:2,b:2 --bind-to none --map-by slot <environment>
python train.py`, where the environment (-x, for Open MPI: every variable but
the shell's and the launcher's own) carries MATEX_HOROVOD=1 (so the ranks
import matex's horovod) and the HOROVOD_* settings that horovodrun's flags
stand for. The MPI
launcher is MATEX_MPIRUN (mpirun by default). Options that need Horovod's own
launcher (Gloo, elastic, jsrun, ssh settings) are refused, naming them.
"""
import argparse
import os
import shlex
import subprocess
import sys

# Flags that only set a HOROVOD_* variable: flag -> (variable, conversion).
_SETTINGS = {
    "fusion_threshold_mb": ("HOROVOD_FUSION_THRESHOLD", lambda mb: str(int(float(mb) * 1024 * 1024))),
    "cycle_time_ms": ("HOROVOD_CYCLE_TIME", str),
    "timeline_filename": ("HOROVOD_TIMELINE", str),
    "stall_check_warning_time_seconds": ("HOROVOD_STALL_CHECK_TIME_SECONDS", str),
    "stall_check_shutdown_time_seconds": ("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", str),
    "log_level": ("HOROVOD_LOG_LEVEL", str),
}
_REFUSED = {
    "gloo": "matex runs under MPI only",
    "jsrun": "matex runs under MPI only (mpirun or srun)",
    "min_np": "elastic training is not served",
    "max_np": "elastic training is not served",
    "host_discovery_script": "elastic training is not served",
    "ssh_port": "mpirun reaches the hosts; configure ssh for it (~/.ssh/config)",
    "ssh_identity_file": "mpirun reaches the hosts; configure ssh for it (~/.ssh/config)",
    "autotune": "matex tunes with matex-tune (docs/tuning.md), not at run time",
}


def _parser():
    p = argparse.ArgumentParser(prog="horovodrun", description="horovodrun served by matex: a thin wrapper over "
                                "mpirun (docs/horovod.md)")
    p.add_argument("-np", "--num-proc", type=int, dest="np")
    p.add_argument("-H", "--hosts")
    p.add_argument("-hostfile", "--hostfile")
    p.add_argument("--mpi-args", default="")
    p.add_argument("--network-interface", "--network-interfaces", dest="network_interface")
    p.add_argument("--output-filename")
    p.add_argument("--check-build", action="store_true")
    p.add_argument("--no-stall-check", action="store_true")
    p.add_argument("--fusion-threshold-mb")
    p.add_argument("--cycle-time-ms")
    p.add_argument("--timeline-filename")
    p.add_argument("--stall-check-warning-time-seconds")
    p.add_argument("--stall-check-shutdown-time-seconds")
    p.add_argument("--log-level")
    for flag in ("gloo", "jsrun", "autotune", "mpi", "tcp", "hierarchical-allreduce", "hierarchical-allgather",
                 "disable-cache", "timeline-mark-cycles", "verbose"):
        p.add_argument(f"--{flag}", action="store_true")
    for flag in ("min-np", "max-np", "host-discovery-script", "ssh-port", "ssh-identity-file", "cache-capacity",
                 "start-timeout"):
        p.add_argument(f"--{flag}")
    p.add_argument("-p", dest="ssh_port")
    p.add_argument("-i", dest="ssh_identity_file")
    p.add_argument("command", nargs=argparse.REMAINDER)
    return p


def _is_open_mpi(mpirun):
    try:
        text = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in text or "OpenRTE" in text


def check_build():
    from matex import _build, _libraries
    facts = _build.facts()
    tf = os.path.exists(_libraries.OPS_LIBRARY)
    torch = _libraries.torch_extension_built()
    cuda = _build.built_with_cuda(facts)
    mark = lambda on: "[X]" if on else "[ ]"  # noqa: E731
    return "\n".join([
        f"Horovod v0.28.1 API, served by matex {facts.get('version', '?')}:", "",
        "Available Frameworks:", f"    {mark(tf)} TensorFlow", f"    {mark(torch)} PyTorch", "    [ ] MXNet", "",
        "Available Controllers:", "    [X] MPI", "    [ ] Gloo", "",
        "Available Tensor Operations:", f"    {mark(cuda)} NCCL", "    [ ] DDL", "    [ ] CCL", "    [X] MPI",
        "    [ ] Gloo", ""])


_LOCAL_ONLY = {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "TERM", "DISPLAY", "SHELL", "PS1", "LS_COLORS",
               "TMUX", "STY"}
_LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PRTE_", "OPAL_", "ORTE_", "SSH_", "BASH_FUNC")


def _exportable(name):
    """Whether horovodrun passes this environment variable to every rank (with -x)."""
    return (name.isidentifier() and name not in _LOCAL_ONLY and not name.startswith(_LAUNCHER_PREFIXES))


def command(args, environ):
    """(argv, environment) of the mpirun that serves `args`."""
    for name, why in _REFUSED.items():
        value = getattr(args, name, None)
        if value not in (None, False):
            raise SystemExit(f"horovodrun (served by matex): --{name.replace('_', '-')} is not supported: {why}")
    if not args.command:
        raise SystemExit("horovodrun (served by matex): no command to run (horovodrun -np N python train.py)")
    if args.np is None or args.np < 1:
        raise SystemExit("horovodrun (served by matex): -np N (the number of processes, at least 1) is required")
    if args.hosts and args.hostfile:
        raise SystemExit("horovodrun (served by matex): give -H or --hostfile, not both")
    env = dict(environ)
    env["MATEX_HOROVOD"] = "1"
    exported = ["MATEX_HOROVOD"]
    for name, (variable, convert) in _SETTINGS.items():
        value = getattr(args, name)
        if value is not None:
            env[variable] = convert(value)
            exported.append(variable)
    if args.no_stall_check:
        env["HOROVOD_STALL_CHECK_DISABLE"] = "1"
        exported.append("HOROVOD_STALL_CHECK_DISABLE")
    mpirun = environ.get("MATEX_MPIRUN", "mpirun") or "mpirun"
    argv = [mpirun, "-np", str(args.np)]
    if args.hosts:
        argv += ["--host", args.hosts]
    if args.hostfile:
        argv += ["--hostfile", args.hostfile]
    open_mpi = _is_open_mpi(mpirun)
    if args.output_filename:
        argv += ["--output-filename", args.output_filename] if open_mpi else ["-outfile-pattern",
                                                                               f"{args.output_filename}/rank.%r"]
    if args.network_interface and open_mpi:
        argv += ["--mca", "btl_tcp_if_include", args.network_interface, "--mca", "oob_tcp_if_include",
                 args.network_interface]
    extra = shlex.split(args.mpi_args)
    if open_mpi:
        # As Horovod's horovodrun: no binding (the frameworks run thread pools), ranks placed slot by slot,
        # unless --mpi-args says otherwise.
        given = {a.lstrip("-").split("=", 1)[0].replace("_", "-") for a in extra if a.startswith("-")}
        if not given & {"bind-to", "cpu-set", "cpu-list"}:
            argv += ["--bind-to", "none"]
        if not given & {"map-by", "npernode", "N", "ppr", "pernode", "rankfile", "rf"}:
            argv += ["--map-by", "slot"]
        # Open MPI sends the ranks on other hosts only what -x names: as Horovod does, the whole environment,
        # less what belongs to this shell or to the launcher itself.
        passed = exported + [n for n in env if n not in exported and _exportable(n)]
        for name in passed:
            argv += ["-x", name]
    argv += extra
    return argv + list(args.command), env


def main(argv=None):
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.check_build:
        print(check_build())
        return 0
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    full, env = command(args, os.environ)
    if args.verbose:
        print("horovodrun (served by matex):", " ".join(shlex.quote(a) for a in full), file=sys.stderr)
    try:
        return subprocess.call(full, env=env)
    except FileNotFoundError:
        raise SystemExit(f"horovodrun (served by matex): cannot run {full[0]!r}: no MPI launcher there (set "
                         "MATEX_MPIRUN, or put the MPI module's bin folder on PATH)") from None
