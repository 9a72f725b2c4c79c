#!/usr/bin/env python3
"""Does a wheel's native code load here? Run by ``tfbuild smoke --in-image`` inside a container of
another system (standard library only, any Python 3.6+):

    python3 _loadprobe.py WHEEL

Unpacks the wheel and asks this system's dynamic loader to load every shared object in it
(``dlopen`` through ctypes, lazy binding): the loader checks each library's needed symbol
versions (``GLIBC_2.34``, ``GLIBCXX_3.4.30``) against this system's libraries, which is what
decides whether the wheel can be imported here. Libraries that need others of the same wheel are
retried until nothing more loads. Prints one JSON object.
"""

import ctypes
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path


def main(wheel: str) -> None:
    out = tempfile.mkdtemp(prefix="tfbuild-load-")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(out)
    libraries = sorted(
        str(path)
        for path in Path(out).rglob("*")
        if path.is_file() and (path.name.endswith(".so") or ".so." in path.name)
    )
    errors: dict[str, str] = {}
    pending = list(libraries)
    while pending:
        still = []
        for path in pending:
            try:
                ctypes.CDLL(path, mode=os.RTLD_LAZY | ctypes.RTLD_GLOBAL)
                errors.pop(path, None)
            except OSError as exc:
                errors[path] = str(exc).replace(out + "/", "")
                still.append(path)
        if len(still) == len(pending):
            break
        pending = still
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    print(
        json.dumps(
            {
                "glibc": glibc.split()[-1] if glibc else None,
                "libraries": [
                    {
                        "path": str(Path(path).relative_to(out)),
                        "loads": path not in errors,
                        "error": errors.get(path),
                    }
                    for path in libraries
                ],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
