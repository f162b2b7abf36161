"""python -m matex doctor (and matexrun --check): a short report of what this
installation was built with and what this machine offers it, in the spirit of
`horovodrun --check-build`. It starts no MPI job and imports no framework:
versions come from the installed packages' metadata, the MPI library answers
MPI_Get_library_version (callable before MPI_Init), the settings come from
`matex-topo --print-config`. Exit status 1 when something would stop a job
(a library that does not load, a binding built for another framework
release, a setting the library refuses), else 0."""
import ctypes
import glob
import importlib.metadata
import importlib.util
import os
import subprocess
import sys

from . import _build, _libraries

_problems = []


def _line(label, text):
    print(f"  {label:<14} {text}")


def _problem(text):
    _problems.append(text)
    return text


def _yes(flag):
    return str(flag).upper() in ("ON", "1", "TRUE", "YES")


def _installed_version(module, distributions):
    """The version of the package that provides `module`, from its metadata; None if absent."""
    if importlib.util.find_spec(module) is None:
        return None
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def _mpi(info):
    try:
        libmpi = _libraries.load_libmpi("doctor")
    except ImportError as error:
        _line("MPI", _problem(str(error)))
        return
    text = ctypes.create_string_buffer(8192)
    length = ctypes.c_int(0)
    version = "MPI_Get_library_version failed"
    if libmpi.MPI_Get_library_version(text, ctypes.byref(length)) == 0:
        version = text.value.decode(errors="replace").strip().splitlines()[0].rstrip(",")
    _line("MPI", f"{version} (built with {info.get('mpi_c_compiler') or '?'}, MPI {info.get('mpi_version') or '?'})")
    query = getattr(libmpi, "MPIX_Query_cuda_support", None)
    if query is None:
        aware = "not stated by this MPI (MATEX_CUDA_AWARE_MPI=1 asserts it; auto assumes no)"
    else:
        aware = "yes" if query() else "no (device buffers are staged through host memory)"
    _line("CUDA-aware", aware)


def _native_library():
    path = _libraries.LIBMATEXCOMM
    try:
        library = ctypes.CDLL(path)
        library.matex_version_string.restype = ctypes.c_char_p
        _line("libmatexcomm", f"{library.matex_version_string().decode()} at {path}")
    except OSError as error:
        _line("libmatexcomm", _problem(f"{path} does not load: {error}"))


def _hardware(info):
    if _yes(info.get("hwloc")):
        _line("hwloc", f"used for the topology (hwloc {info.get('hwloc_version') or '?'})")
    else:
        _line("hwloc", "not found at build time: the topology comes from /sys and the CPU affinity")
    if not _yes(info.get("cuda")):
        _line("CUDA / NCCL", "CPU path only (no CUDA toolkit with nvcc and nccl.h at build time)")
        return
    gpus = "no driver (libcuda.so.1 does not load)"
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        if cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0:
            gpus = f"{count.value} GPU(s) visible"
        else:
            gpus = "driver loads but sees no usable GPU"
    except OSError:
        pass
    nccl = "libnccl.so.2 not found (loaded at run time; torch brings its own)"
    try:
        library = ctypes.CDLL("libnccl.so.2")
        number = ctypes.c_int(0)
        if library.ncclGetVersion(ctypes.byref(number)) == 0:
            code = number.value
            nccl = f"NCCL {code // 10000}.{code // 100 % 100}.{code % 100}" if code >= 10000 else f"NCCL {code}"
    except OSError:
        pass
    _line("CUDA / NCCL", f"device path built (CUDA {info.get('cuda_version') or '?'}); {gpus}; {nccl}")


def _framework(info, label, key, module, distributions, binding_built):
    installed = _installed_version(module, distributions)
    built_for = info.get(f"{key}_version") or ""
    if _yes(info.get(key)) and binding_built:
        binding = f"binding built for {built_for}"
        if installed and _build.release(installed) != _build.release(built_for):
            binding = _problem(f"binding built for {built_for}, but {installed} is installed now: reinstall matex")
    else:
        binding = f"no binding ({info.get(key + '_why') or 'not built'})"
    if installed is None:
        state = "not installed"
    else:
        why = _build.problem(key, installed, info)
        state = f"{installed} installed" + (f"; {why}" if why else "")
    _line(label, f"{state}; {binding}; supported {_build.range_text(key, info)}")


def _frameworks(info):
    package = _libraries.PACKAGE
    _framework(info, "TensorFlow", "tf", "tensorflow", ("tensorflow", "tensorflow-cpu", "tf-nightly"),
               os.path.exists(os.path.join(package, "_matex_ops.so")))
    keras = _installed_version("keras", ("keras",))
    if keras is not None:
        why = _build.problem("keras", keras, info)
        _line("Keras", f"{keras} installed" + (f"; {why}" if why else "") +
              f"; supported {_build.range_text('keras', info)}")
    spec = importlib.util.find_spec("matex_torch")
    torch_folder = os.path.dirname(spec.origin) if spec and spec.origin else ""
    _framework(info, "PyTorch", "torch", "torch", ("torch",),
               bool(torch_folder and glob.glob(os.path.join(torch_folder, "_matex_torch*.so"))))


def _shared_memory():
    try:
        stats = os.statvfs("/dev/shm")
        free, size = stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize
        shm = f"/dev/shm {free / 2**30:.1f} GiB free of {size / 2**30:.1f} GiB"
        if size < 2**30:
            shm += " (" + _problem("under 1 GiB: containers often need --shm-size for large collectives") + ")"
    except OSError:
        shm = _problem("/dev/shm is missing: the shared-memory path cannot run")
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as handle:
            scope = handle.read().strip()
        cma = "allowed" if scope == "0" else f"ptrace_scope {scope}: single-copy (CMA) off, shared memory used instead"
    except OSError:
        cma = "allowed (no Yama restriction)"
    _line("shared memory", f"{shm}; cross-memory attach: {cma}")


def _settings():
    topo = _libraries.tool("matex-topo")
    if topo is None:
        _line("settings", "matex-topo is not installed here; cannot list the MATEX_* settings")
        return
    run = subprocess.run([topo, "--print-config"], capture_output=True, text=True)
    if run.returncode != 0:
        _line("settings", _problem("refused: " + (run.stderr.strip() or run.stdout.strip())))
        return
    changed = [line for line in run.stdout.splitlines() if line.startswith("MATEX_") and "(default)" not in line]
    _line("settings", "all MATEX_* settings at their defaults" if not changed else changed[0])
    for line in changed[1:]:
        _line("", line)


def main(argv):
    if argv:
        print("usage: python -m matex doctor", file=sys.stderr)
        return 2
    _problems.clear()
    info = _build.facts()
    print(f"matex {info.get('version', '?')} at {_libraries.PACKAGE} (Python {sys.executable})")
    _native_library()
    _mpi(info)
    _hardware(info)
    _frameworks(info)
    _shared_memory()
    _settings()
    if _problems:
        print(f"{len(_problems)} problem(s):")
        for text in _problems:
            print(f"  - {text}")
        return 1
    print("no problems found")
    return 0
