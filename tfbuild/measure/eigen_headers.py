"""The stock wheel's Eigen headers, copied for the forecast's compiler.

A wheel is untrusted input: only regular files inside its include directory are copied, so no link,
device or path out of it reaches the compiler.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from tfbuild.core.errors import InputError

#: The Eigen trees the benchmark includes, under the wheel's tensorflow/include.
EIGEN_TREES = ("Eigen", "unsupported/Eigen")


def copy_eigen(include: Path, into: Path, *, label: str) -> Path:
    """Copy the wheel's Eigen headers into ``into``/include, each checked to be a regular file
    inside ``include`` (a wheel is untrusted input: no link, device or path out of it reaches the
    compiler). Returns the include directory of the copy."""
    missing = InputError(
        f"{label} has no Eigen headers",
        why=f"{include}/Eigen and {include}/unsupported/Eigen are where TensorFlow wheels ship "
        "them, and they are not there",
        fix="Forecast against a TensorFlow wheel that ships its headers (tensorflow-cpu from "
        "the package index does).",
    )
    try:
        root = include.resolve(strict=True)
    except OSError:
        raise missing from None
    target = into / "include"
    for tree in EIGEN_TREES:
        top = include / tree
        if not top.is_dir() or top.is_symlink():
            raise missing
        for here, dirs, files in os.walk(top):
            for name in sorted(dirs + files):
                path = Path(here) / name
                mode = path.lstat().st_mode
                inside = path.resolve().is_relative_to(root)
                if stat.S_ISDIR(mode) and inside:
                    continue
                if not (stat.S_ISREG(mode) and inside):
                    raise InputError(
                        f"{label} ships an Eigen header that is not a plain file: "
                        f"{path.relative_to(include)}",
                        why="only regular files inside the wheel's include directory are "
                        "compiled (a link or device could read anything on this host)",
                        fix="Forecast against an unmodified wheel.",
                    )
                dest = target / path.relative_to(include)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest)
    if not (target / "unsupported/Eigen/CXX11/Tensor").is_file():
        raise missing
    return target
