"""Where this interpreter's packages are, found without importing any: one JSON line.

Run by tfbuild in an interpreter it is asked about (``python -I -c LAUNCH which_tf.py [DIST ...]``,
see ``tfbuild.core.commands``); imports only the standard library, valid on Python 3.8. It prints
``{"tensorflow": DIR|null, "purelib": DIR, "overlays": [DIR, ...], "versions": {DIST: VERSION|null}}``:
the directory of the ``tensorflow`` package the interpreter would import, its purelib directory,
every directory of its path holding a tfbuild overlay's loader (the site-packages directories
TensorFlow scans for ``tensorflow-plugins/``), and the installed version of each distribution named.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import site
import sys
import sysconfig
from pathlib import Path

LOADER = Path("tensorflow-plugins", "libtfbuild_overlay.so")


def main(names: list[str]) -> int:
    spec = importlib.util.find_spec("tensorflow")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    dirs = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    found = {
        "tensorflow": locations[0] if locations else None,
        "purelib": sysconfig.get_paths()["purelib"],
        "overlays": [d for d in dict.fromkeys(dirs) if (Path(d) / LOADER).is_file()],
        "versions": versions,
    }
    sys.stdout.write(json.dumps(found) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
