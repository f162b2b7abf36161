"""The console scripts of the wheel (pyproject.toml): each runs the program
of the same name from matex/bin with the arguments given. matexrun also takes
--check, the report of `python -m matex doctor`."""
import os
import sys

from . import _libraries


def _run(name):
    path = _libraries.tool(name)
    if path is None:
        sys.exit(f"{name}: not in this installation of matex ({_libraries.PACKAGE}/bin); reinstall the package")
    os.execv(path, [name] + sys.argv[1:])


def matexrun():
    if sys.argv[1:] == ["--check"]:
        from . import _doctor
        sys.exit(_doctor.main([]))
    _run("matexrun")


def matex_topo():
    _run("matex-topo")


def matex_bench():
    _run("matex-bench")


def matex_tune():
    _run("matex-tune")
