"""MATEX_ENABLE=1 with a framework outside the declared range, or with a
binding that was not built, stops at activation with a message that names the
versions, before anything is patched or MPI is started (matex/_build.py);
inside the range it goes on. Run with the Python of the environment the
package was pip-installed into (tests/install, fixtures tf_venv and
torch_venv). Each case is a fresh process whose matex reads a build-facts
file written here, with the ranges or the binding changed."""
import json
import os
import subprocess
import sys
import tempfile

import matex._build as build

FACTS = build.facts()
FAILURES = []


def facts_file(folder, name, **changes):
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as handle:
        json.dump(dict(FACTS, **changes), handle)
    return path


def run(code, facts, enable=True):
    """Starts one fresh process and returns it: every case imports a framework (seconds of CPU each), and
    the cases do not depend on each other, so they run side by side; expect() waits for each."""
    env = dict(os.environ, MATEX_FACTS=facts)
    env.pop("PYTHONPATH", None)
    if enable:
        env["MATEX_ENABLE"] = "1"
    else:
        env.pop("MATEX_ENABLE", None)
    prelude = "import os, matex._build as b; b._FILE = os.environ['MATEX_FACTS']\n"
    return subprocess.Popen([sys.executable, "-c", prelude + code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def expect(what, process, status, *texts):
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        output = process.communicate()[0] + "\n(killed after 300 s)"
    ok = process.returncode == status and all(text in output for text in texts)
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        print(f"  status {process.returncode} (wanted {status}); wanted {texts} in:\n{output[-3000:]}")
        FAILURES.append(what)


# TensorFlow: activation runs right after the script's `import tensorflow` finishes.
TF_PROBE = """
import tensorflow as tf
from matex import _activation, _runtime
print("active", _activation.active(), "mpi", _runtime.is_initialized())
"""
with tempfile.TemporaryDirectory() as folder:
    checks = []  # (what, process, status, texts): every process starts here, and is judged below
    tf_old_texts = ["is outside the range this matex supports, 2.0 to below 2.1", "Nothing was patched"]
    if FACTS.get("tf") == "ON":
        checks += [
            ("TensorFlow outside the range stops the job, names both, patches nothing",
             run(TF_PROBE, facts_file(folder, "tf_old", tf_range="2.0,2.1")), 1, tf_old_texts),
            ("Keras outside the range stops the job",
             run(TF_PROBE, facts_file(folder, "keras_new", keras_range="9.0,9.1")), 1,
             ["Keras", "is outside the range this matex supports, 9.0 to below 9.1"]),
            ("a package without the op library stops the job and says why",
             run("import matex._runtime as r; r._LIBRARY = '/nonexistent/_matex_ops.so'\n" + TF_PROBE,
                 facts_file(folder, "tf_skipped", tf_why="MATEX_WITH_TF=0")), 1,
             ["installed without its TensorFlow binding (MATEX_WITH_TF=0)"]),
            ("without MATEX_ENABLE an unsupported TensorFlow is left alone",
             run(TF_PROBE, facts_file(folder, "tf_old_off", tf_range="2.0,2.1"), enable=False), 0,
             ["active False mpi False"]),
        ]
    if FACTS.get("torch") == "ON":
        # The takeover starts at the process group: `import torch` alone goes on (a TensorFlow job's
        # libraries may import it), the gloo group is refused, another backend left alone.
        group = ("import torch, torch.distributed as d\nprint('imported', flush=True)\n"
                 "d.init_process_group('{}', rank=0, world_size=1, store=d.HashStore())\nprint('group made')")
        checks += [
            ("torch outside the range: MATEX_ENABLE=1 refuses the gloo group the takeover would serve",
             run(group.format("gloo"), facts_file(folder, "torch_old", torch_range="2.0,2.1")), 1,
             ["imported", "PyTorch", "is outside the range this matex supports, 2.0 to below 2.1",
              "Nothing was patched"]),
            ("a binding built for another torch release is refused too",
             run(group.format("gloo"), facts_file(folder, "torch_other", torch_version="2.11.0")), 1,
             ["binding was built for 2.11.0"]),
            ("without MATEX_ENABLE an unsupported torch imports, the backend inert",
             run("import torch\nprint('imported')", facts_file(folder, "torch_old_off", torch_range="2.0,2.1"),
                 enable=False), 0, ["imported"]),
            ("inside the range MATEX_ENABLE=1 takes over as before",
             run("import torch, torch.distributed.distributed_c10d as c\n"
                 "print('wrapped', getattr(c.init_process_group, '_matex_takeover', False))",
                 facts_file(folder, "torch_ok")), 0, ["wrapped True"]),
        ]
    if FACTS.get("tf") == "ON":  # the refusal names the installed release, which this process reads meanwhile
        import tensorflow
        tf_old_texts.insert(0, f"TensorFlow {tensorflow.__version__} is outside")
    for what, process, status, texts in checks:
        expect(what, process, status, *texts)
if FAILURES:
    sys.exit(f"FAIL: {len(FAILURES)} case(s)")
print("PASS: unsupported framework releases are refused at activation, supported ones run")
