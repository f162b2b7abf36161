"""kill_rank0_save_test.py VENV_PYTHON MPIEXEC [RANKS] - runs
kill_rank0_save.py under MATEX_ENABLE=1, where rank 0 is killed (SIGKILL) in
the middle of its second Model.save, and passes when:
- every rank has ended, with a non-zero status and a message naming rank 0,
  within MATEX_TIMEOUT_SECONDS of the kill and 15 s for the teardown (nothing
  waits for the dead rank);
- the file under the final name is still the whole file of the first save
  (same bytes), and nothing else appeared under a name of the user's.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def digest(path):
    with open(path, "rb") as data:
        return hashlib.sha256(data.read()).hexdigest()


def main():
    python, mpiexec = sys.argv[1], sys.argv[2]
    ranks = sys.argv[3] if len(sys.argv) > 3 else "2"
    timeout = float(os.environ.get("MATEX_TIMEOUT_SECONDS", "60"))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kill_rank0_save.py")
    directory = tempfile.mkdtemp(prefix="matex-kill-save-")
    print(f"# the saves go to {directory}", flush=True)
    target = os.path.join(directory, "model.keras")
    env = dict(os.environ, MATEX_ENABLE="1")
    env.pop("PYTHONPATH", None)
    job = subprocess.Popen([mpiexec, "-np", ranks, "--oversubscribe", python, script, directory], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, marks = [], {}

    def read():
        for line in job.stdout:
            lines.append(line)
            if "first save done" in line and "first" not in marks:
                marks["first"] = digest(target)
            if "rank 0 dies while writing" in line:
                marks["killed"] = time.monotonic()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        status = job.wait(timeout=300)
    except subprocess.TimeoutExpired:
        job.kill()
        return fail(lines, "the job did not end within 300 s: a rank waits for the dead rank 0")
    ended = time.monotonic()
    reader.join(timeout=10)
    output = "".join(lines)
    if "killed" not in marks or "first" not in marks:
        return fail(lines, "rank 0 was not killed in its second save (the script did not get that far)")
    waited = ended - marks["killed"]
    if status == 0:
        return fail(lines, "the job ended with status 0 after rank 0 was killed")
    # The library's clock runs from the start of the call the others wait in (before the kill); after it
    # come a grace period and MPI_Abort's teardown on busy cores: 15 s of slack, half the timeout.
    if waited > timeout + 15:
        return fail(lines, f"the job ended {waited:.1f} s after the kill, more than MATEX_TIMEOUT_SECONDS={timeout:g} "
                           "and 15 s for the teardown")
    if not re.search(r"rank 0\b", output.split("rank 0 dies while writing", 1)[1]):
        return fail(lines, "no message after the kill names rank 0")
    if "the second save returned" in output:
        return fail(lines, "a rank returned from the save that rank 0 never finished")
    if not os.path.exists(target) or digest(target) != marks["first"]:
        return fail(lines, f"{target} is not the whole file of the first save any more")
    visible = sorted(n for n in os.listdir(directory) if not n.startswith("."))
    if visible != ["model.keras"]:
        return fail(lines, f"unexpected files under the user's names: {visible}")
    print(f"PASS: the job ended {waited:.1f} s after rank 0 was killed mid-save (status {status}); "
          f"model.keras is still the first save's whole file; left aside: "
          f"{sorted(n for n in os.listdir(directory) if n.startswith('.'))}")
    shutil.rmtree(directory)  # kept when the test fails, to look at
    return 0


def fail(lines, why):
    sys.stdout.write("".join(lines[-60:]))
    print(f"FAIL: {why} (the save directory is kept, at the path printed first)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
