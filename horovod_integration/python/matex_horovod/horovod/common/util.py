"""horovod.common.util's helpers that scripts and Horovod's own tests import,
answered for matex's build (MPI always; no Gloo, CCL or DDL; NCCL when built
with CUDA)."""
import contextlib
import os
import re


def is_iterable(x):
    try:
        iter(x)
    except TypeError:
        return False
    return True


def is_version_greater_equal_than(ver, target):
    """Whether version text `ver` is at least `target` (both "major.minor.patch"-like)."""
    if any(not isinstance(v, str) for v in (ver, target)):
        raise ValueError("is_version_greater_equal_than takes version strings")

    def release(text):  # "2.16.0rc1+cu121" -> (2, 16, 0); a pre-release counts as its release
        return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0].split("rc")[0])[:3])
    return release(ver) >= release(target)


def split_list(items, n):
    """items cut into n consecutive parts whose lengths differ by at most one."""
    quotient, remainder = divmod(len(items), n)
    parts, start = [], 0
    for i in range(n):
        end = start + quotient + (1 if i < remainder else 0)
        parts.append(items[start:end])
        start = end
    return parts


def num_rank_is_power_2(num_rank):
    return num_rank > 0 and num_rank & (num_rank - 1) == 0


@contextlib.contextmanager
def env(**kwargs):
    """Sets environment variables for the body of a with statement (None unsets one), then restores them."""
    saved = {key: os.environ.get(key) for key in kwargs}
    try:
        for key, value in kwargs.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = str(value)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _built_with_cuda():
    from matex import _build
    return _build.built_with_cuda()


def mpi_built(verbose=False):
    return True


def gloo_built(verbose=False):
    return False


def ccl_built(verbose=False):
    return False


def ddl_built(verbose=False):
    return False


def nccl_built(verbose=False):
    """As hvd.nccl_built(): NCCL's version code, 1 when built with CUDA and none loads, 0 without CUDA."""
    if not _built_with_cuda():
        return 0
    from matex import _libraries
    return _libraries.nccl_version() or 1


def gpu_available(ext_base_name, verbose=False):
    return _built_with_cuda()


def extension_available(ext_base_name, verbose=False):
    """horovod.torch and horovod.tensorflow are served; mxnet is not."""
    return ext_base_name in ("horovod.torch", "horovod.tensorflow", "torch", "tensorflow")
