"""python -m matex doctor | horovod-env | --cmake-dir | --pkg-config-dir | --include-dir | --lib-dir

  doctor            what this installation found and what this machine offers (matex/_doctor.py)
  horovod-env       the shell line that opts a job in to Horovod's API served by matex:
                    eval "$(python -m matex horovod-env)"   (docs/horovod.md)
  --cmake-dir       the folder to give CMake: -Dmatexcomm_DIR=$(python -m matex --cmake-dir)
  --pkg-config-dir  the folder to add to PKG_CONFIG_PATH for `pkg-config matexcomm`
  --include-dir     the headers' folder
  --lib-dir         libmatexcomm's folder
"""
import os
import sys

from . import _libraries

_FOLDERS = {
    "--cmake-dir": os.path.join(_libraries.LIBDIR, "cmake", "matexcomm"),
    "--pkg-config-dir": os.path.join(_libraries.LIBDIR, "pkgconfig"),
    "--include-dir": _libraries.INCLUDEDIR,
    "--lib-dir": _libraries.LIBDIR,
}


def main(argv):
    if len(argv) == 1 and argv[0] in _FOLDERS:
        folder = _FOLDERS[argv[0]]
        if not os.path.isdir(folder):
            print(f"matex: {folder} is missing: {argv[0]} answers for a pip-installed matex "
                  "(pip install <repository>)", file=sys.stderr)
            return 1
        print(folder)
        return 0
    if argv == ["horovod-env"]:
        from . import _libraries as libraries
        folder = libraries.HOROVOD_FOLDER
        if not os.path.isdir(os.path.join(folder, "horovod")):
            print(f"matex: {folder} holds no horovod package (an incomplete installation)", file=sys.stderr)
            return 1
        path = os.pathsep.join([os.path.join(folder, "bin"), os.path.dirname(sys.executable)])
        print(f'export MATEX_HOROVOD=1 PATH="{path}:$PATH"')
        return 0
    if argv[:1] == ["doctor"]:
        from . import _doctor
        return _doctor.main(argv[1:])
    print(__doc__.strip(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
    return 0 if argv[:1] in (["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
