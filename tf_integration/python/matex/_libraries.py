"""Where the native parts of an installed (or built) matex are, and loading
libmpi the way every binding needs it. Open MPI loads its plugins with dlopen
and expects libmpi's symbols to be global, while Python loads extensions with
local symbols: so libmpi goes in first with RTLD_GLOBAL. Shared by the
TensorFlow binding (matex/_runtime.py), the PyTorch binding
(matex_torch/_native.py) and `python -m matex doctor`."""
import ctypes
import ctypes.util
import glob
import os

from . import _build

PACKAGE = os.path.dirname(os.path.abspath(__file__))
LIBDIR = os.path.join(PACKAGE, "lib")          # libmatexcomm, the interposer, cmake/, pkgconfig/
INCLUDEDIR = os.path.join(PACKAGE, "include")  # installed wheels only
LIBMATEXCOMM = os.path.join(LIBDIR, "libmatexcomm.so.0")
OPS_LIBRARY = os.path.join(PACKAGE, "_matex_ops.so")  # the TensorFlow binding, when built
# matex_torch sits beside matex, in the wheel and in a build's python/ folder.
TORCH_PACKAGE = os.path.join(os.path.dirname(PACKAGE), "matex_torch")
# Horovod's API served by matex: the folder holding the package `horovod` and
# bin/horovodrun, beside matex; on sys.path only with MATEX_HOROVOD=1.
HOROVOD_FOLDER = os.path.join(os.path.dirname(PACKAGE), "matex_horovod")


def torch_extension_built():
    """Whether the PyTorch binding's extension was built and installed."""
    return bool(glob.glob(os.path.join(TORCH_PACKAGE, "_matex_torch*.so")))


def _built_with():
    """The libmpi the package was built against (_build_info.json), first:
    a module's MPI need not be on the loader's path at run time."""
    listed = _build.facts().get("mpi_libraries", "")
    return [path for path in listed.split(":") if os.path.basename(path).startswith("libmpi.so")]


def load_libmpi(who="matex"):
    """libmpi with global symbols; ImportError naming every name tried."""
    errors = []
    for name in _built_with() + [ctypes.util.find_library("mpi"), "libmpi.so.40", "libmpi.so.12", "libmpi.so"]:
        if not name:
            continue
        try:
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError as error:
            errors.append(f"{name}: {error}")
    raise ImportError(f"{who}: cannot load libmpi with global symbols ({'; '.join(errors) or 'no libmpi found'}); "
                      "load the MPI module the package was built with, or put its lib folder on LD_LIBRARY_PATH")


def nccl_version():
    """The version code (22703 for 2.27.3) of the NCCL this process would load (libnccl.so.2, which the
    GPU path opens at run time), or None where none loads."""
    try:
        number = ctypes.c_int(0)
        if ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(number)) == 0 and number.value > 0:
            return number.value
    except (OSError, AttributeError):
        pass
    return None


def tool(name):
    """The path of one of matex's programs (matex-topo, matexrun, ...): in the
    wheel's matex/bin, or, run from a build tree (<build>/python/matex), in
    <build>/bin. None when neither has it."""
    for folder in (os.path.join(PACKAGE, "bin"), os.path.join(PACKAGE, "..", "..", "bin")):
        path = os.path.normpath(os.path.join(folder, name))
        if os.access(path, os.X_OK):
            return path
    return None
