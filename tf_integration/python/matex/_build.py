"""What the build of this package found (_build_info.json, written by CMake:
cmake/MatexWheel.cmake) and the framework releases it supports
(cmake/MatexFrameworkVersions.cmake). MATEX_ENABLE=1 calls check() before it
patches anything: a framework outside its range stops the job with a message
rather than being patched blindly."""
import json
import os
import re

_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_build_info.json")
_NAMES = {"tf": "TensorFlow", "keras": "Keras", "torch": "PyTorch"}


class UnsupportedVersion(RuntimeError):
    pass


def facts():
    """The build's facts as a dict ({} when the file is missing: a source tree)."""
    try:
        with open(_FILE) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def built_with_cuda(info=None):
    """Whether this build has CUDA (the build facts' "cuda" flag: ON, 1, TRUE or YES)."""
    flag = (facts() if info is None else info).get("cuda", "")
    return str(flag).upper() in ("ON", "1", "TRUE", "YES")


def release(version):
    """(2, 15, 0) of "2.15.0+cu132"; None if the text has no release number."""
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return tuple(int(part or 0) for part in found.groups()) if found else None


def supported_range(framework, info=None):
    """(min, below) as tuples for "tf", "keras" or "torch"; None if unknown."""
    text = (info if info is not None else facts()).get(f"{framework}_range", "")
    if "," not in text:
        return None
    low, high = text.split(",", 1)
    return release(low), release(high)


def range_text(framework, info=None):
    bounds = (info if info is not None else facts()).get(f"{framework}_range", "")
    return bounds.replace(",", " to below ") if bounds else "unknown"


def problem(framework, version, info=None):
    """Why `version` of the framework cannot be used, or None if it can."""
    bounds = supported_range(framework, info)
    have = release(version)
    if bounds is None:
        return None
    if have is None or not bounds[0] <= have < bounds[1]:
        return (f"{_NAMES[framework]} {version} is outside the range this matex supports, "
                f"{range_text(framework, info)} (docs/compatibility.md)")
    return None


def same_release(version, built_for):
    """Whether a binding built against `built_for` serves `version`: the
    frameworks' C++ ABI changes between minor releases, so major.minor must
    match. Unknown versions are given the benefit of the doubt."""
    have, built = release(version), release(built_for)
    return have is None or built is None or have[:2] == built[:2]


def check(framework, version, binding_built, rebuild_hint):
    """Raises UnsupportedVersion, naming the fix, when MATEX_ENABLE=1 cannot
    run `version` of the framework: outside the supported range, the binding
    was not built, or it was built for another release."""
    info = facts()
    why = problem(framework, version, info)
    built_for = info.get(f"{framework}_version", "")
    if why is None and not binding_built:
        why = (f"this matex was installed without its {_NAMES[framework]} binding"
               f" ({info.get(framework + '_why') or 'not built'})")
    elif why is None and framework != "keras" and not same_release(version, built_for):
        why = (f"its {_NAMES[framework]} binding was built for {built_for}, and {version} is imported now "
               "(install matex again in this environment)")
    if why is not None:
        raise UnsupportedVersion(f"matex: MATEX_ENABLE=1 cannot run here: {why}. Nothing was patched. "
                                 f"{rebuild_hint}, or run without MATEX_ENABLE.")
