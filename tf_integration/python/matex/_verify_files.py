"""The working directories of `python -m matex.verify`'s runs, and which
files the runs wrote there.

Every run works in its own directory, which starts with a symbolic link to
every entry of the directory verify was started in: the script finds its
inputs by the same relative paths, and what it writes stays apart from the
other runs' (the plain and the noise run go side by side; a
CheckpointManager would restore the plain run's checkpoints in the
distributed run). Whatever regular file is in the directory afterwards (the
links not followed) the run wrote.

The distributed run must write the files the reference wrote, by the same
names. Contents are not compared: they legitimately differ (a .keras file is
a zip holding time stamps). A few names differ too, and compare with their
varying part as "*" (_normalised).
"""
import collections
import contextlib
import os
import re
import shutil
import stat
import sys

# TensorBoard names its event files after the time, the host and the process:
# events.out.tfevents.<time>.<host>.<pid>.<n>.v2 (and .profile-empty beside a profile).
_EVENTS = re.compile(r"^events\.out\.tfevents\.")
# The profiler writes plugins/profile/<time stamp>/<host>.<kind>; a host name may hold dots, hence the kinds.
_PROFILE_FILE = re.compile(r"^.+?\.((?:xplane|trace|memory_profile|input_pipeline|overview_page|tensorflow_stats|"
                           r"kernel_stats|pod_viewer|tf_data_stats|op_profile)\..+)$")
# Python writes these beside a module the script imports through a link; they say nothing of the run.
_IGNORED_DIRECTORIES = ("__pycache__",)


def run_directory(work, name):
    """Makes <work>/<name>.cwd, with a link to every entry of the directory verify runs in (except the
    work directory itself, where TMPDIR is that directory), and returns its path."""
    directory = os.path.join(work, f"{name}.cwd")
    os.makedirs(directory)
    start = os.getcwd()
    for entry in os.listdir(start):
        original = os.path.join(start, entry)
        if not _holds(original, work):
            os.symlink(original, os.path.join(directory, entry))
    return directory


def _holds(path, inner):
    path, inner = os.path.realpath(path), os.path.realpath(inner)
    return inner == path or inner.startswith(path + os.sep)


def _normalised(path):
    """The name a file written at `path` (relative to the run's directory) compares by."""
    *directories, name = path.split(os.sep)
    if _EVENTS.match(name):
        name = "events.out.tfevents.*"
    if directories[-3:-1] == ["plugins", "profile"]:
        directories[-1] = "*"
        kind = _PROFILE_FILE.match(name)
        name = f"*.{kind.group(1)}" if kind else name
    return "/".join(directories + [name])


def written(directory):
    """The regular files below `directory`: their normalised name -> the sizes of the files by that name
    (several where names differ only in their varying part). Links, the run directory's or the script's,
    are neither counted nor followed."""
    files = collections.defaultdict(list)
    for root, directories, names in os.walk(directory):  # does not descend into links
        directories[:] = [d for d in directories if d not in _IGNORED_DIRECTORIES]
        for name in names:
            path = os.path.join(root, name)
            status = os.lstat(path)
            if stat.S_ISREG(status.st_mode):
                files[_normalised(os.path.relpath(path, directory))].append(status.st_size)
    return dict(files)


def _count(files):
    return sum(len(sizes) for sizes in files.values())


def _plural(count):
    return f"{count} file{'' if count == 1 else 's'}"


def _shortfall(these, those):
    """How many files of `these` have no counterpart by the same name in `those`."""
    return sum(max(0, len(sizes) - len(those.get(name, []))) for name, sizes in these.items())


def _emptied(ours, theirs):
    """How many files are empty in the distributed run where the reference's by that name are not."""
    return sum(max(0, theirs.get(name, []).count(0) - sizes.count(0)) for name, sizes in ours.items() if any(sizes))


def _name_problems(name, ours, theirs, reference, run):
    """What is wrong with the files by one normalised name: `ours` and `theirs` are their sizes in the
    reference and in the distributed run."""
    if not theirs:
        return [f"files: the {run} did not write '{name}', which the {reference} wrote"]
    if not ours:
        return [f"files: the {run} wrote '{name}', which the {reference} did not"]
    problems = []
    if len(ours) != len(theirs):
        problems.append(f"files: the {run} wrote {len(theirs)} '{name}', the {reference} {len(ours)}")
    if any(ours) and theirs.count(0) > ours.count(0):
        problems.append(f"files: '{name}' is empty in the {run}, not in the {reference}")
    return problems


def compare(ours, theirs, reference, run):
    """Compares the files the reference wrote (`ours`, from written) with the distributed run's (`theirs`);
    `reference` and `run` say which runs they are ("plain run", "2-rank run"). Returns the summary line
    (None where neither run wrote a file) and the problems."""
    problems = [problem for name in sorted(ours.keys() | theirs.keys())
                for problem in _name_problems(name, ours.get(name, []), theirs.get(name, []), reference, run)]
    total, others = _count(ours), _count(theirs)
    if not total and not others:
        return None, problems
    line = f"# files: the {reference} wrote {_plural(total) if total else 'no files'}; the {run} "
    if not problems:
        return line + f"the same {total}", problems
    return (line + f"{others}: {_shortfall(ours, theirs)} missing, {_shortfall(theirs, ours)} extra, "
            f"{_emptied(ours, theirs)} empty"), problems


def _entry_states(start, work):
    """What the entries of the start directory look like now (their modification time and size), except
    the work directory and verify's own output (`> verify.log` in that directory)."""
    outputs = set()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            status = os.fstat(stream.fileno())
            outputs.add((status.st_dev, status.st_ino))
    states = {}
    for entry in os.listdir(start):
        path = os.path.join(start, entry)
        with contextlib.suppress(OSError):
            status = os.stat(path)
            if (status.st_dev, status.st_ino) not in outputs and entry not in _IGNORED_DIRECTORIES \
                    and not _holds(path, work):
                states[entry] = (status.st_mtime_ns, status.st_size)
    return states


@contextlib.contextmanager
def links_watched(work, what):
    """Warns, once the runs in the block finished, of entries of the start directory that changed meanwhile:
    a script that writes a file already there writes it through the link, into the original that every
    run shares (the collision the run directories are there to avoid). Only the start directory's own
    entries are watched: a file written into a linked directory below them goes unseen."""
    start = os.getcwd()
    before = _entry_states(start, work)
    yield
    after = _entry_states(start, work)
    for entry in sorted(name for name, state in before.items() if after.get(name, state) != state):
        print(f"# WARNING: '{entry}' in {start} changed during the {what}: every run reaches that directory's "
              "entries through links, so a script writing one writes the original, the same for every run "
              "(move it away)", flush=True)


def keep(work, destination):
    """Moves every run's directory out of the work directory into `destination` (links stay links),
    replacing what an earlier verify left there by the same names."""
    os.makedirs(destination, exist_ok=True)
    kept = []
    for name in sorted(os.listdir(work)):
        if not name.endswith(".cwd"):
            continue
        target = os.path.join(destination, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.remove(target)
        shutil.move(os.path.join(work, name), target)
        kept.append(name)
    print(f"# run directories kept in {destination}: {', '.join(kept) or 'none'}", flush=True)
