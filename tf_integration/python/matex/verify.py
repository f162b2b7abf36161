"""python -m matex.verify -np N [--virtual-nodes 2,2] [--also N[:LAYOUT] ...] [--noise]
                        [--reference plain|activated] [--rtol 1e-4] [--keep-dirs DIR]
                        script.py [args...]

Runs an unmodified TensorFlow script as the user would, plainly on one
process with no matex at all (the reference), and with MATEX_ENABLE=1 on N
ranks under mpirun (side by side with the reference, which is independent of
it and leaves cores idle while it imports), and compares what each run did (matex/_verify_log.py:
every optimizer step's variable norms, fit's logs per batch, evaluate's
results, the metrics and TF1 fetches the script reads), printing the runs
side by side with the largest relative difference. It exits non-zero when a
difference exceeds --rtol, the runs made different numbers of steps, or
they wrote different files (below). Each --also adds another distributed
run (e.g. --also 4:2,2 for 4 ranks on virtual nodes 2,2) checked against
the same reference. --noise runs the plain reference a second time, beside
the first, with TF_ENABLE_ONEDNN_OPTS=0 (other kernels, other rounding): a
difference no larger than what rounding alone moved between those two runs
is then reported as rounding, not as a failure.
--reference activated compares against a 1-rank MATEX_ENABLE=1 run instead.

Every run works in its own fresh directory inside verify's temporary work
directory (plain.cwd, noise.cwd, one.cwd for --reference activated,
many0.cwd for the -np run, many1.cwd for the first --also, ...), which
starts with a symbolic link to every entry of the directory verify was
started in: the script reads its inputs by the same relative paths (its own
path is made absolute; its arguments are passed unchanged), and the files it
writes (ModelCheckpoint, CSVLogger, CheckpointManager, save_weights,
TensorBoard logs) stay in that run's directory, where no other run
overwrites or restores them. A file or directory that already exists in the
start directory is shared, though: a script writing it writes the original,
through its link (verify warns when one changed during a run).

After each distributed run, the files the reference wrote in its directory
(regular files; links are neither counted nor followed) are compared by
name with those the distributed run wrote: a file only one of them wrote,
or one that is empty in the distributed run and not in the reference, is a
failure. Contents are not compared (they legitimately differ: a .keras file
is a zip holding time stamps), and names that vary from run to run compare
with their varying part as "*": TensorBoard's event files
(events.out.tfevents.*) and the profiler's plugins/profile/*/*.xplane.pb.

--keep-dirs DIR moves every run's directory into DIR (DIR/plain.cwd,
DIR/many0.cwd, ...; links stay links, and directories of those names that
an earlier verify left there are replaced) before the work directory is
deleted, to look at the files the runs wrote afterwards.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import _verify_compare, _verify_files


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m matex.verify", description=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-np", dest="ranks", type=int, required=True, help="ranks of the distributed run (>= 2)")
    parser.add_argument("--virtual-nodes", default=None, help="MATEX_VIRTUAL_NODES of the distributed run, e.g. 2,2")
    parser.add_argument("--also", action="append", default=[], metavar="N[:LAYOUT]",
                        help="another distributed run against the same reference, e.g. 4:2,2")
    parser.add_argument("--reference", choices=("plain", "activated"), default="plain",
                        help="plain: the script on one process without matex (default); activated: MATEX_ENABLE=1 "
                             "on 1 rank")
    parser.add_argument("--noise", action="store_true",
                        help="also run the plain reference with TF_ENABLE_ONEDNN_OPTS=0 and accept differences "
                             "within what that rounding moves")
    parser.add_argument("--rtol", type=float, default=1e-4, help="largest relative difference allowed (1e-4)")
    parser.add_argument("--mpirun", default=None, help="the launcher (default: MATEX_MPIRUN, mpirun)")
    parser.add_argument("--keep-dirs", default=None, metavar="DIR",
                        help="move every run's working directory into DIR (DIR/plain.cwd, DIR/many0.cwd, ...) "
                             "before the work directory is deleted")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    if options.mpirun is None:
        from . import _runtime
        options.mpirun = _runtime.config("MATEX_MPIRUN")
    options.runs = [(options.ranks, options.virtual_nodes)]
    for extra in options.also:
        ranks, _, layout = extra.partition(":")
        if not ranks.isdigit():
            parser.error(f"--also {extra!r}: expected N or N:LAYOUT, e.g. 4:2,2")
        options.runs.append((int(ranks), layout or None))
    if any(ranks < 2 for ranks, _ in options.runs):
        parser.error("-np and --also need at least 2 ranks (the reference run has 1 process)")
    if options.noise and options.reference != "plain":
        parser.error("--noise needs the plain reference (--reference plain)")
    if not os.path.exists(options.script):
        parser.error(f"no script {options.script}")
    # Every run works in a directory of its own: the script is found from there by its absolute path.
    options.script = os.path.abspath(options.script)
    if options.keep_dirs is not None:
        options.keep_dirs = os.path.abspath(options.keep_dirs)
    if shutil.which(options.mpirun) is None:
        parser.error(f"launcher {options.mpirun!r} not found (set --mpirun or MATEX_MPIRUN)")
    return options


# Put on the plain run's path: records (matex/_verify_log.py) once the script imports TensorFlow, then
# hands over to the sitecustomize that this one hides, if there is one.
_SITECUSTOMIZE = '''import os, sys
from matex import _verify_log
_verify_log.install_when_imported({log!r})
_here = os.path.dirname(os.path.abspath(__file__))
_mine = sys.modules.pop("sitecustomize", None)
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    import sitecustomize  # noqa: F401
except ImportError:
    pass
finally:
    sys.path[:] = _path
    sys.modules.setdefault("sitecustomize", _mine)
'''


def _read(log):
    if not os.path.exists(log):
        return []
    with open(log) as lines:
        return [json.loads(line) for line in lines if line.strip()]


class _Run:
    """A command running in the background in a working directory of its own (<work>/<name>.cwd: see
    _verify_files), its output kept in a file of the work directory."""

    running = []  # killed if verify stops before they finish

    def __init__(self, command, env, what, work, name):
        self.what = what
        self.directory = _verify_files.run_directory(work, name)
        self.output = open(os.path.join(work, f"{name}.out"), "w+")
        self.started = time.monotonic()
        # PWD too: a script (or the launcher) may take the working directory from it.
        self.process = subprocess.Popen(command, env=dict(env, PWD=self.directory), cwd=self.directory,
                                        stdout=self.output, stderr=subprocess.STDOUT, text=True)
        _Run.running.append(self.process)

    def finish(self):
        status = self.process.wait()
        print(f"# the {self.what} took {time.monotonic() - self.started:.1f} s", flush=True)
        self.output.seek(0)
        text = self.output.read()
        self.output.close()
        if status != 0:
            sys.stdout.write(text[-4000:])
            sys.exit(f"matex.verify: the {self.what} failed (exit status {status})")


def _start_plain(options, work, name, extra_env):
    """The script as the user runs it: one process, no MATEX_ENABLE, no mpirun. Returns the running
    _Run and its log; _read the log once it finished."""
    log = os.path.join(work, f"{name}.jsonl")
    site = os.path.join(work, f"{name}-site")
    os.makedirs(site)
    with open(os.path.join(site, "sitecustomize.py"), "w") as out:
        out.write(_SITECUSTOMIZE.format(log=log))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MATEX_") and k != "MATEX_VIRTUAL_NODES"}
    env.update(extra_env)
    env["PYTHONPATH"] = os.pathsep.join([site] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    command = [sys.executable, options.script, *options.args]
    shown = " ".join(f"{k}={v}" for k, v in extra_env.items())
    print(f"# plain reference: {shown + ' ' if shown else ''}{' '.join(command)}", flush=True)
    return _Run(command, env, "plain run" + (f" ({shown})" if shown else ""), work, name), log


def _start_activated(options, work, name, ranks, layout):
    """The script under mpirun with MATEX_ENABLE=1. Returns the running _Run and its log."""
    log = os.path.join(work, f"{name}.jsonl")
    env = dict(os.environ, MATEX_ENABLE="1", MATEX_VERIFY_LOG=log)
    env.pop("MATEX_VIRTUAL_NODES", None)
    if layout:
        env["MATEX_VIRTUAL_NODES"] = layout
    command = [options.mpirun, "-np", str(ranks), "--oversubscribe", sys.executable, options.script, *options.args]
    print(f"# {'MATEX_VIRTUAL_NODES=' + layout + ' ' if layout else ''}MATEX_ENABLE=1 {' '.join(command)}", flush=True)
    return _Run(command, env, f"{ranks}-rank run", work, name), log


def _run_activated(options, work, name, ranks, layout):
    """_start_activated, finished. Returns rank 0's records and the run's directory."""
    with _verify_files.links_watched(work, f"{ranks}-rank run"):
        run, log = _start_activated(options, work, name, ranks, layout)
        run.finish()
    return _read(log), run.directory


def _run_reference_and_first(options, work):
    """Runs the reference (and the noise run) and the first distributed run. The one-process runs are
    independent of the others, so all run side by side: a one-process run leaves cores idle (most of it
    is one thread importing the framework). Returns the reference's records, the noise run's (None
    without --noise), the reference's directory, what it is called in messages, and the first
    distributed run's records and directory."""
    ranks, layout = options.runs[0]
    if options.reference == "activated":
        reference, directory = _run_activated(options, work, "one", 1, None)
        first, first_directory = _run_activated(options, work, "many0", ranks, layout)
        return reference, None, directory, "1-rank run", first, first_directory
    noise = None
    with _verify_files.links_watched(work, "plain and distributed runs"):
        plain, log = _start_plain(options, work, "plain", {})
        if options.noise:
            other, noise_log = _start_plain(options, work, "noise", {"TF_ENABLE_ONEDNN_OPTS": "0"})
        distributed, first_log = _start_activated(options, work, "many0", ranks, layout)
        plain.finish()
        if options.noise:
            other.finish()
        distributed.finish()
    reference = _read(log)
    if options.noise:
        noise = _read(noise_log)
        print(_verify_compare.noise_summary(reference, noise))
    return reference, noise, plain.directory, "plain run", _read(first_log), distributed.directory


def _print_problems(problems):
    for problem in problems[:20]:
        print(f"FAIL: {problem}")
    if len(problems) > 20:
        print(f"FAIL: ... and {len(problems) - 20} more")


def _compare_files(reference_files, reference_what, directory, ranks):
    """Prints the summary of the files the distributed run wrote in `directory` against the reference's,
    and returns the problems."""
    summary, problems = _verify_files.compare(reference_files, _verify_files.written(directory), reference_what,
                                              f"{ranks}-rank run")
    if summary:
        print(summary)
    return problems


def _stop(work, keep_dirs):
    """Ends the runs still going, keeps their directories where asked, and deletes the work directory."""
    try:
        for process in _Run.running:
            if process.poll() is None:
                process.kill()
                process.wait()
        if keep_dirs is not None:
            _verify_files.keep(work, keep_dirs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    options = _parse(sys.argv[1:] if argv is None else argv)
    work = tempfile.mkdtemp(prefix="matex-verify-")
    failed = False
    try:
        reference, noise, reference_directory, reference_what, many, directory = _run_reference_and_first(options,
                                                                                                         work)
        reference_files = _verify_files.written(reference_directory)
        for index, (ranks, layout) in enumerate(options.runs):
            if index:
                many, directory = _run_activated(options, work, f"many{index}", ranks, layout)
            problems = _verify_compare.Comparison(reference, many, ranks, options.rtol, noise).run()
            file_problems = _compare_files(reference_files, reference_what, directory, ranks)
            _print_problems(problems)
            _print_problems(file_problems)
            if not problems and not file_problems:
                where = f" on virtual nodes {layout}" if layout else ""
                print(f"PASS: {ranks} ranks{where} follow the {options.reference} 1-process run", flush=True)
            failed = failed or bool(problems) or bool(file_problems)
    finally:
        _stop(work, options.keep_dirs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
