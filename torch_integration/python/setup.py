"""pip install --no-build-isolation <repo>/torch_integration/python

Packages `matex_torch`: the extension _matex_torch (built by the repository's
CMake project against the torch this Python imports, hence
--no-build-isolation) with libmatexcomm beside it, and two entry points:
`torch.distributed.backends` (init_process_group("matex") works without an
import) and `torch.backends` (run by `import torch`: the launcher rendezvous
and the MATEX_ENABLE=1 takeover of gloo). With MATEX_BUILD_DIR set to a build
of the project configured with torch, its assembled <build>/python/matex_torch
is taken as it is.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))


def assembled_package():
    build_dir = os.environ.get("MATEX_BUILD_DIR")
    if build_dir:
        if not os.path.isabs(build_dir):
            build_dir = os.path.join(REPOSITORY, build_dir)
        folder = os.path.join(build_dir, "python", "matex_torch")
        if not glob.glob(os.path.join(folder, "_matex_torch*.so")):
            sys.exit(f"MATEX_BUILD_DIR={build_dir}: no python/matex_torch/_matex_torch*.so there; build the project "
                     "with torch installed first (cmake -DMATEX_WITH_TORCH=ON)")
        return folder
    build_dir = tempfile.mkdtemp(prefix="matex-torch-pip-build-")
    subprocess.check_call(["cmake", "-S", REPOSITORY, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                           "-DMATEX_WITH_TORCH=ON", "-DMATEX_WITH_TF=OFF", "-DMATEX_BUILD_TESTS=OFF",
                           "-DMATEX_BUILD_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}"])
    subprocess.check_call(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2),
                           "--target", "matex_torch_package"])
    return os.path.join(build_dir, "python", "matex_torch")


class BuildWithExtension(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "matex_torch")
        os.makedirs(target, exist_ok=True)
        for path in glob.glob(os.path.join(assembled_package(), "*.so*")):
            shutil.copy2(path, target)


class BinaryDistribution(Distribution):
    """The wheel carries native code built for one Python and one torch."""

    def has_ext_modules(self):
        return True


setup(
    name="matex-torch",
    distclass=BinaryDistribution,
    version="0.1.0",
    description='torch.distributed backend "matex": libmatexcomm collectives (shared memory in a node, MPI across)',
    packages=["matex_torch"],
    package_dir={"matex_torch": "matex_torch"},
    python_requires=">=3.9",
    entry_points={
        "torch.distributed.backends": ["matex = matex_torch:register"],
        "torch.backends": ["matex_torch = matex_torch._autoload:autoload"],
    },
    cmdclass={"build_py": BuildWithExtension},
    zip_safe=False,
)
