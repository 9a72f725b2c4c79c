"""Run the canary's STAND-IN wheel where it is installed: its kernel, its C++ part, its flags.

``python standin_probe.py MODULE N`` (run by ``tfbuild/smoke/standin.py``): imports MODULE (the
stand-in's package), runs its kernel and ``canary_runtime(N)`` from its library, and prints one
JSON line: the module, the library's path, the kernel's checksum, the runtime's answer, and the
BUILD_FLAGS the build recorded beside it (null when there are none). Standard library only.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import sys
from pathlib import Path


def main(module: str, n: int) -> None:
    canary = importlib.import_module(module)
    here = Path(str(canary.__file__)).parent
    library = here / "libcanary.so"
    found: dict[str, object] = {"module": canary.__name__, "library": str(library)}
    found["checksum"] = canary.run(4096, 10)
    lib = ctypes.CDLL(str(library))
    lib.canary_runtime.restype = ctypes.c_int
    lib.canary_runtime.argtypes = [ctypes.c_int]
    found["runtime"] = lib.canary_runtime(n)
    flags = here / "BUILD_FLAGS"
    found["flags"] = flags.read_text().split() if flags.is_file() else None
    print(json.dumps(found))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
