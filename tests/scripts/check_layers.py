#!/usr/bin/env python3
"""check_layers.py [ROOT] [--self-test] - fails when a file includes one from a layer above its own.

libmatexcomm/src is a stack of folders, each a layer that may include the
layers below it and never one above (docs/architecture.md draws it):

    api          the C API
    engine       the asynchronous engine
    comm         the Communicator: argument checks, call checks, the watchdog
    select       auto's choice: fixed sizes, tables, tuning files, trials
    algorithms   one algorithm per file
    gpu, transport   the GPU resources and kernels; shared memory, CMA, MPI reductions
                     (two peers: neither includes the other)
    topology     host ids, layouts, node and rail communicators, hwloc
    core         errors, configuration, dtypes, kernels, MPI handles

The public headers (libmatexcomm/include: "matexcomm/...") may be included
from anywhere. The front ends (tf_integration, torch_integration and the MPI
interposer) are thin folders over the C API: they include only the public
headers and their own files. An include is a line `#include "folder/file"`;
one without a folder is the including file's own folder (or a generated file).
Prints every violation as `path:line: text (why)` and exits 1 if there is one.
--self-test first checks that a made-up tree with an upward include, an
unknown folder and a front end reaching inside is refused, line by line.
"""
import os
import re
import sys

# What each layer of libmatexcomm/src may include besides itself.
BELOW = {
    "core": [],
    "topology": ["core"],
    "gpu": ["core"],
    "transport": ["core", "topology"],
    "algorithms": ["core", "topology", "gpu", "transport"],
    "select": ["core", "topology", "gpu", "transport", "algorithms"],
    "comm": ["core", "topology", "gpu", "transport", "algorithms", "select"],
    "engine": ["core", "topology", "gpu", "transport", "algorithms", "select", "comm"],
    "api": ["core", "topology", "gpu", "transport", "algorithms", "select", "comm", "engine"],
}
PUBLIC = "matexcomm"
FRONT_ENDS = ["tf_integration", "torch_integration", "libmatexcomm/interposer"]
SOURCE_ENDINGS = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(folder):
    for directory, _, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith(SOURCE_ENDINGS):
                yield os.path.join(directory, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            found = INCLUDE.match(line)
            if found:
                yield number, line.strip(), found.group(1)


def check_library(root):
    problems = []
    src = os.path.join(root, "libmatexcomm", "src")
    for layer in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, layer)):
            continue
        if layer not in BELOW:
            problems.append(f"{os.path.join(src, layer)}: a folder that is no layer (add it to BELOW in {__file__})")
            continue
        allowed = set(BELOW[layer]) | {layer, PUBLIC}
        for path in sources(os.path.join(src, layer)):
            for number, text, target in includes(path):
                folder = target.split("/")[0] if "/" in target else layer
                if folder in allowed:
                    continue
                why = (f"{layer} may not include {folder}, a layer above it" if folder in BELOW
                       else f"{folder}/ is not a layer of libmatexcomm/src")
                problems.append(f"{os.path.relpath(path, root)}:{number}: {text} ({why})")
    return problems


def check_front_ends(root):
    problems = []
    for front_end in FRONT_ENDS:
        for path in sources(os.path.join(root, front_end)):
            for number, text, target in includes(path):
                folder = target.split("/")[0] if "/" in target else None
                if folder in BELOW:
                    problems.append(f"{os.path.relpath(path, root)}:{number}: {text} "
                                    f"({front_end} is a front end: the public headers only)")
    return problems


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        files = {
            "libmatexcomm/src/core/fine.h": '#include "core/other.h"\n#include "matexcomm/matexcomm.h"\n',
            "libmatexcomm/src/core/up.cc": '#include <vector>\n#include "comm/communicator.h"\n',
            "libmatexcomm/src/gpu/peer.cc": '#include "transport/shm_segment.h"\n',
            "libmatexcomm/src/comm/down.cc": '#include "select/selector.h"\n#include "local.h"\n',
            "libmatexcomm/src/attic/old.cc": "",
            "libmatexcomm/src/api/odd.cc": '#include "matex/topology/layout.h"\n',
            "tf_integration/ops/kernel.cc": '#include "matexcomm/matexcomm.h"\n#include "core/dtype.h"\n',
        }
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as handle:
                handle.write(text)
        found = check_library(root) + check_front_ends(root)
        expected = ["libmatexcomm/src/core/up.cc:2:", "libmatexcomm/src/gpu/peer.cc:1:", "/attic: a folder",
                    "libmatexcomm/src/api/odd.cc:1:", "tf_integration/ops/kernel.cc:2:"]
        missing = [e for e in expected if not any(e in line for line in found)]
        if missing or len(found) != len(expected):
            print("FAIL: the self-test expected", expected, "and got", found)
            return False
    return True


def main():
    arguments = [a for a in sys.argv[1:] if a != "--self-test"]
    if "--self-test" in sys.argv[1:] and not self_test():
        return 1
    root = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), "..", ".."))
    problems = check_library(root) + check_front_ends(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"FAIL: {len(problems)} include(s) point up a layer or out of a front end")
        return 1
    print("layers: every include in libmatexcomm/src points down or sideways within its layer; "
          "the front ends include only the public headers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
