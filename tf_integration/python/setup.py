"""pip install --no-build-isolation <repo>/tf_integration/python

Builds the op library with the repository's CMake project (TensorFlow must be
importable by this Python, hence --no-build-isolation) and packages `matex`
with _matex_ops.so and libmatexcomm beside it, plus matex-activate.pth
(the MATEX_ENABLE=1 startup hook, one environment lookup otherwise). With MATEX_BUILD_DIR set to an
existing build of the project (configured with TensorFlow; a relative path is
taken from the repository's root), its assembled package in
<build>/python/matex is taken as it is, without compiling again.
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
    """The folder <build>/python/matex holding the op library, building it if needed."""
    build_dir = os.environ.get("MATEX_BUILD_DIR")
    if build_dir:
        # pip runs this from its own copy or from here: a relative path means the repository's.
        if not os.path.isabs(build_dir):
            build_dir = os.path.join(REPOSITORY, build_dir)
        folder = os.path.join(build_dir, "python", "matex")
        if not os.path.exists(os.path.join(folder, "_matex_ops.so")):
            sys.exit(f"MATEX_BUILD_DIR={build_dir}: no python/matex/_matex_ops.so there; build the project with "
                     "TensorFlow installed first (cmake -DMATEX_WITH_TF=ON)")
        return folder
    build_dir = tempfile.mkdtemp(prefix="matex-pip-build-")
    subprocess.check_call(["cmake", "-S", REPOSITORY, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                           "-DMATEX_WITH_TF=ON", "-DMATEX_BUILD_TESTS=OFF", "-DMATEX_BUILD_BENCH=OFF",
                           f"-DPython3_EXECUTABLE={sys.executable}"])
    subprocess.check_call(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2),
                           "--target", "matex_python_package"])
    return os.path.join(build_dir, "python", "matex")


class BuildWithOpLibrary(build_py):
    def run(self):
        super().run()
        source = assembled_package()
        target = os.path.join(self.build_lib, "matex")
        os.makedirs(target, exist_ok=True)
        for path in glob.glob(os.path.join(source, "*.so*")):
            shutil.copy2(path, target)
        # The startup hook goes to site-packages itself, where Python reads .pth files.
        shutil.copy2(os.path.join(HERE, "matex-activate.pth"), self.build_lib)


class BinaryDistribution(Distribution):
    """The wheel carries a shared library built for one Python and one TensorFlow."""

    def has_ext_modules(self):
        return True


setup(
    name="matex",
    distclass=BinaryDistribution,
    version="0.1.0",
    description="MPI data parallelism for unmodified TensorFlow scripts, backed by libmatexcomm",
    packages=["matex"],
    package_dir={"matex": "matex"},
    python_requires=">=3.9",
    cmdclass={"build_py": BuildWithOpLibrary},
    zip_safe=False,
)
