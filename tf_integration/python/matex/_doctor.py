"""python -m matex doctor (and matexrun --check): a short report of what this
installation was built with and what this machine offers it, in the spirit of
`horovodrun --check-build`. It starts no MPI job and imports no framework:
versions come from the installed packages' metadata, the MPI library answers
MPI_Get_library_version (callable before MPI_Init), the settings come from
`matex-topo --print-config`. Exit status 1 when something would stop a job
(a library that does not load, a binding built for another framework
release, a setting the library refuses), else 0."""
import ctypes
import importlib.metadata
import importlib.util
import os
import subprocess
import sys

from . import _build, _libraries

class _Report:
    """The report's lines as they are printed, and the problems among them."""

    def __init__(self):
        self.problems = []

    def line(self, label, text):
        print(f"  {label:<14} {text}")

    def problem(self, text):
        self.problems.append(text)
        return text


def _yes(flag):
    return str(flag).upper() in ("ON", "1", "TRUE", "YES")


def _installed_version(module):
    """The version of the package that provides `module`, from its metadata;
    None if absent, "unknown" without metadata (a module system's PYTHONPATH)."""
    if importlib.util.find_spec(module) is None:
        return None
    try:
        names = importlib.metadata.packages_distributions().get(module, [])
    except AttributeError:  # Python < 3.10
        names = {"tensorflow": ["tensorflow", "tensorflow-cpu"]}.get(module, [module])
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def _mpi(report, info):
    try:
        libmpi = _libraries.load_libmpi("doctor")
    except ImportError as error:
        report.line("MPI", report.problem(str(error)))
        return
    text = ctypes.create_string_buffer(8192)
    length = ctypes.c_int(0)
    version = "MPI_Get_library_version failed"
    if libmpi.MPI_Get_library_version(text, ctypes.byref(length)) == 0:
        lines = text.value.decode(errors="replace").strip().splitlines()
        version = lines[0].rstrip(",") if lines else "an MPI that gives no version text"
    built_with = f"built with {info.get('mpi_c_compiler') or '?'}, MPI {info.get('mpi_version') or '?'}"
    report.line("MPI", f"{version} ({built_with})")
    query = getattr(libmpi, "MPIX_Query_cuda_support", None)
    if query is None:
        aware = "not stated by this MPI (MATEX_CUDA_AWARE_MPI=1 asserts it; auto assumes no)"
    else:
        aware = "yes" if query() else "no (device buffers are staged through host memory)"
    report.line("CUDA-aware", aware)


def _native_library(report):
    path = _libraries.LIBMATEXCOMM
    try:
        library = ctypes.CDLL(path)
        library.matex_version_string.restype = ctypes.c_char_p
        report.line("libmatexcomm", f"{library.matex_version_string().decode()} at {path}")
    except OSError as error:
        report.line("libmatexcomm", report.problem(f"{path} does not load: {error}"))


def _hardware(report, info):
    if _yes(info.get("hwloc")):
        report.line("hwloc", f"used for the topology (hwloc {info.get('hwloc_version') or '?'})")
    else:
        report.line("hwloc", "not found at build time: the topology comes from /sys and the CPU affinity")
    if not _build.built_with_cuda(info):
        report.line("CUDA / NCCL", "CPU path only (no CUDA toolkit with nvcc and nccl.h at build time)")
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
    code = _libraries.nccl_version()
    if code is not None:
        nccl = f"NCCL {code // 10000}.{code // 100 % 100}.{code % 100}" if code >= 10000 else f"NCCL {code}"
    report.line("CUDA / NCCL", f"device path built (CUDA {info.get('cuda_version') or '?'}); {gpus}; {nccl}")


def _framework(report, info, label, key, module, binding_built):
    installed = _installed_version(module)
    built_for = info.get(f"{key}_version") or ""
    if _yes(info.get(key)) and binding_built:
        binding = f"binding built for {built_for}"
        if installed and installed != "unknown" and not _build.same_release(installed, built_for):
            binding = report.problem(f"binding built for {built_for}, but {installed} is installed now: "
                                     "reinstall matex")
    else:
        binding = f"no binding ({info.get(key + '_why') or 'not built'})"
    if installed is None:
        state = "not installed"
    else:
        why = _build.problem(key, installed, info)
        state = f"{installed} installed" + (f"; {why}" if why else "")
    report.line(label, f"{state}; {binding}; supported {_build.range_text(key, info)}")


def _frameworks(report, info):
    _framework(report, info, "TensorFlow", "tf", "tensorflow", os.path.exists(_libraries.OPS_LIBRARY))
    xla = info.get("tf_xla")
    if xla:
        report.line("XLA lowerings", "built (jit_compile keeps matex's ops)" if xla == "built" else
                    f"{xla}; a jit-compiled function that holds matex's ops runs without XLA")
    keras = _installed_version("keras")
    if keras is not None:
        why = _build.problem("keras", keras, info)
        report.line("Keras", f"{keras} installed" + (f"; {why}" if why else "") +
                    f"; supported {_build.range_text('keras', info)}")
    _framework(report, info, "PyTorch", "torch", "torch", _libraries.torch_extension_built())


def _shared_memory(report):
    try:
        stats = os.statvfs("/dev/shm")
        free, size = stats.f_bavail * stats.f_frsize, stats.f_blocks * stats.f_frsize
        shm = f"/dev/shm {free / 2**30:.1f} GiB free of {size / 2**30:.1f} GiB"
        if size < 2**30:
            shm += " (under 1 GiB: large collectives may not fit; containers take --shm-size)"
    except OSError:
        shm = report.problem("/dev/shm is missing: the shared-memory path cannot run")
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as handle:
            scope = handle.read().strip()
        cma = "allowed" if scope == "0" else f"ptrace_scope {scope}: single-copy (CMA) off, shared memory used instead"
    except OSError:
        cma = "allowed (no Yama restriction)"
    report.line("shared memory", f"{shm}; cross-memory attach: {cma}")


def _settings(report):
    topo = _libraries.tool("matex-topo")
    if topo is None:
        report.line("settings", "matex-topo is not installed here; cannot list the MATEX_* settings")
        return
    try:
        run = subprocess.run([topo, "--print-config"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        report.line("settings", report.problem(f"{topo} --print-config did not run: {error}"))
        return
    if run.returncode != 0:
        report.line("settings", report.problem("refused: " + (run.stderr.strip() or run.stdout.strip())))
        return
    changed = [line for line in run.stdout.splitlines() if line.startswith("MATEX_") and "(default)" not in line]
    report.line("settings", "all MATEX_* settings at their defaults" if not changed else changed[0])
    for line in changed[1:]:
        report.line("", line)


def main(argv):
    if argv:
        print("usage: python -m matex doctor", file=sys.stderr)
        return 2
    report = _Report()
    info = _build.facts()
    print(f"matex {info.get('version', '?')} at {_libraries.PACKAGE} (Python {sys.executable})")
    _native_library(report)
    _mpi(report, info)
    _hardware(report, info)
    _frameworks(report, info)
    _shared_memory(report)
    _settings(report)
    if report.problems:
        print(f"{len(report.problems)} problem(s):")
        for text in report.problems:
            print(f"  - {text}")
        return 1
    print("no problems found")
    return 0
