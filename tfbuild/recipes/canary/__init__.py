"""The canary: a miniature STAND-IN for TensorFlow's source tree (it is not TensorFlow).

`tfbuild doctor` and the end-to-end tests run the real pipeline (rendered ``build.sh``, the
toolchain container, the output directory) on this tree instead of TensorFlow, which takes hours and
fetches from the internet. It honours the same contract: ``build.sh`` installs the rendered rc file
as ``.tf_configure.bazelrc``, runs ``bazel build --config=opt ... //tensorflow/tools/pip_package:wheel``,
and finds a wheel in ``bazel-bin/tensorflow/tools/pip_package/wheel_house/``.

The tree is a real bazel workspace (WORKSPACE, .bazelrc, BUILD files) and ``bazel`` is a real bazel:
Debian's ``bazel-bootstrap`` package (bazel 4.2.3; the toolchain image installs it instead of
bazelisk, ``render.STANDIN_BAZEL_PACKAGE``), because it builds offline and is packaged by the
canary's distributions (bookworm 4.2.3+ds-9, trixie 4.2.3+ds-11). The canary's rules take the
target flags, the compiler and TF_SYSROOT by the paths TensorFlow's C++ compiles take them
(tree/third_party/canary.bzl says which: an undefined ``--config`` stops bazel, and TF_SYSROOT
without ``@local_config_cuda``'s crosstool changes nothing, as in TensorFlow's build); besides:

- ``--@rules_ml_toolchain//common:enable_hermetic_cc``: a build setting of a local stand-in
  repository; True is refused (the canary has no hermetic toolchain);
- WHEEL_NAME: a repository rule reads it, as TensorFlow's python repository rule does. The plan
  gives the canary a name of its own, ``tfbuild_canary`` (``core.defaults.STANDIN_WHEEL``, also its
  import name), so that installing the stand-in never replaces a TensorFlow.

The wheel is packed by a Python script run as a bazel action
(tree/tensorflow/tools/pip_package/pack_wheel.py), deliberately NOT reproducible: its docstring
and canary.bzl's say how.

What bazel 4.2.3 limits, against the recipes' bazel 6 and 7: it cannot build cc rules offline here
(Debian's rules_cc is newer than it), so the canary has its own compile rules instead of
cc_binary and a cc toolchain; no bzlmod (MODULE.bazel), no platform-based C++ toolchain resolution
(``--noincompatible_enable_cc_toolchain_resolution`` is its default anyway), and a flag only bazel 7
knows would stop it. The plan still names the recipe's bazel (``plan.bazel``, the image label); the
receipt's tools record the bazel that ran (``4.2.3+ds-9 (Debian bazel-bootstrap, ...)``).
The host-run tests (tests/recipes/test_canary.py) run the same bazel on the host (.ci/run installs the package).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from tfbuild.core.errors import UnsupportedError
from tfbuild.recipes.images import BaseImage
from tfbuild.recipes.recipe import Recipe

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
