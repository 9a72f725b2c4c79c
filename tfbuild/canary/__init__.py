"""The canary: a miniature STAND-IN for TensorFlow's source tree (it is not TensorFlow).

`tfbuild doctor` and the end-to-end tests run the real pipeline (rendered ``build.sh``, the
toolchain container, the output directory) on this tree instead of TensorFlow, which takes hours and
fetches from the internet. It honours the same contract: ``build.sh`` installs the rendered rc file
as ``.tf_configure.bazelrc``, runs ``bazel build --config=opt ... //tensorflow/tools/pip_package:wheel``,
and finds a wheel in ``bazel-bin/tensorflow/tools/pip_package/wheel_house/``. Here ``bazel`` is a
small script that compiles one native kernel with the planned compiler and ``build:opt`` flags and
packages it as a wheel whose version says ``tfbuild.canary``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from tfbuild.errors import UnsupportedError
from tfbuild.recipes import BaseImage, Recipe

#: The stand-in source tree, to copy (or mount) where a TensorFlow checkout would go.
TREE = Path(__file__).resolve().parent / "tree"
#: The canary's compiler: the one Debian bookworm packages, already in `tfbuild base`'s image, so
#: the toolchain image needs no third-party repository and no large download.
COMPILER = "gcc-12.2.0"
#: The suite of the canary's base image when no registry can be reached (`tfbuild base`).
SUITE = "bookworm"
#: The library inside the canary wheel whose machine code the checks look at.
LIBRARY = "tfbuild_canary/libcanary.so"


def recipe(newest: Recipe) -> Recipe:
    """The newest recipe's build flow (configs, rc lines, wheel target) with the canary's compiler."""
    return replace(
        newest,
        compiler=COMPILER,
        path=f"canary stand-in (the flow of {newest.path})",
        # Its base image is bookworm, and the snapshot archive is out of reach where tfbuild is
        # tested: the receipt records the exact package versions instead.
        snapshot=None,
        file_sha256=None,
        # Built on Debian 12 to prove the pipeline: its floor is that system's, on purpose, and
        # its compiler is the image's (--sysroot-from links it against an older system's).
        floor=None,
        toolchain=None,
    )


def for_sysroot(recipe: Recipe, build_image: BaseImage) -> Recipe:
    """The canary compiled against a sysroot (--sysroot-from): with the newest clang the build
    image packages, as TensorFlow's sysroot route compiles with clang (GCC looks for its C++ headers
    beside itself, not in the sysroot)."""
    clangs = [c for c in build_image.packaged_compilers if c.startswith("clang-")]
    if not clangs:
        raise UnsupportedError(
            f"{build_image.name} packages no clang for the canary's sysroot build",
            why="a sysroot build compiles with clang, as TensorFlow's does",
            fix="Build on an image whose distribution packages clang (bookworm, trixie).",
        )
    newest = max(clangs, key=lambda c: int(c.split("-")[1]))
    return replace(recipe, compiler=newest)


#: The time of every file of a canary copy, as a release tarball fixes its members' times: the
#: canary's source epoch (SOURCE_DATE_EPOCH) is then the same on every machine and checkout.
EPOCH = 1700000000  # 2023-11-14 22:13:20 UTC


def copy_tree(destination: Path) -> Path:
    """A private copy of the stand-in tree (a build writes into its source, as bazel does)."""
    shutil.copytree(TREE, destination, symlinks=True)
    for path in (destination, *destination.rglob("*")):
        if not path.is_symlink():
            os.utime(path, (EPOCH, EPOCH))
    return destination
