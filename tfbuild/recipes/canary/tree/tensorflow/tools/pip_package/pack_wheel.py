#!/usr/bin/env python3
"""STAND-IN (tfbuild's canary, not TensorFlow's build_pip_package): packs the canary wheel.

Run by bazel as the wheel rule's action (third_party/canary.bzl: ``canary_wheel``): it writes the
wheel's files into the rule's staging directory and zips them into its ``wheel_house`` directory
(bazel-bin/tensorflow/tools/pip_package/wheel_house/), as TensorFlow's tf_wheel writes its wheel
there. Standard library only, Python 3.9+: it runs inside the toolchain container.

The wheel is DELIBERATELY NOT REPRODUCIBLE. It has the sources of non-determinism a real
TensorFlow build has, so that the canary shows whether tfbuild's measures remove them:

1. The wheel is packed the way setuptools' bdist_wheel packs one, without normalisation: the
   package files are written into the staging directory (the library and ``__init__.py`` copied
   with their times and modes, as build_py copies; BUILD_FLAGS, METADATA and WHEEL written now),
   then zipped walking that directory in filesystem order (os.walk, NOT sorted), RECORD last. Each
   member's timestamp is its file's mtime (the build time, or the source file's for the copied
   ``__init__.py``) and its permissions are the file's mode. When the environment has
   SOURCE_DATE_EPOCH (``--action_env=SOURCE_DATE_EPOCH``), every member's timestamp is that
   instead, as bdist_wheel does; the member order stays filesystem order either way: normalising
   it is tfbuild's job, after the build.
2. The library embeds a build date and an absolute build path: ``canary_build_info()`` in kernel.c
   returns ``__DATE__ " " __TIME__`` (which GCC and clang take from SOURCE_DATE_EPOCH when it is
   set, else from the clock in the local time zone) and ``__FILE__``, which the canary's compile
   action gives by absolute path inside bazel's output base (``OUTPUT_BASE/execroot/canary/src/``),
   unless the command line maps it away with ``--copt=-ffile-prefix-map=OUTPUT_BASE=.``.
3. The compiler and this packer get the action's environment (bazel's default shell environment
   with the ``--action_env`` values: SOURCE_DATE_EPOCH, TZ, LC_ALL, ...), so what the build's
   environment passes reaches them.

BUILD_FLAGS records the copts without prefix maps (the planned target flags), so a prefix map
naming the output base does not itself end up in the wheel.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import stat
import time
import zipfile
from pathlib import Path

VERSION = "0.0.0+tfbuild.canary"
PACKAGE = "tfbuild_canary"
#: The earliest time a zip member can carry (1980-01-01), as bdist_wheel clamps it.
ZIP_EPOCH = 315532800


def zip_time(mtime: float) -> tuple[int, int, int, int, int, int]:
    """A member's date_time as bdist_wheel sets it: SOURCE_DATE_EPOCH when set, else the mtime."""
    seconds = int(os.environ.get("SOURCE_DATE_EPOCH", mtime))
    year, month, day, hour, minute, second = time.gmtime(max(seconds, ZIP_EPOCH))[:6]
    return year, month, day, hour, minute, second


def stage(staging: Path, library: Path, init: Path, name: str, flags: list[str]) -> None:
    """The wheel's files written into ``staging`` as a build writes them (times and modes as they
    fall)."""
    package = staging / PACKAGE
    package.mkdir(parents=True)
    shutil.copy2(library, package / "libcanary.so")
    shutil.copy2(init, package / "__init__.py")
    (package / "BUILD_FLAGS").write_text(" ".join(flags) + "\n")
    dist_info = staging / f"{name}-{VERSION}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {VERSION}\n"
        "Summary: tfbuild canary: a stand-in for TensorFlow, not TensorFlow\n"
    )
    (dist_info / "WHEEL").write_text(
        "Wheel-Version: 1.0\nGenerator: tfbuild-canary\nRoot-Is-Purelib: false\n"
        f"Tag: py3-none-linux_{os.uname().machine}\n"
    )


def write_wheel(staging: Path, out_dir: Path, name: str) -> Path:
    """Zip ``staging`` in filesystem order, RECORD last: bdist_wheel without normalisation."""
    record_name = f"{name}-{VERSION}.dist-info/RECORD"
    wheel = out_dir / f"{name}-{VERSION}-py3-none-linux_{os.uname().machine}.whl"
    partial = wheel.with_suffix(".partial")
    record: list[str] = []
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, _dirs, files in os.walk(staging):  # deliberately not sorted
            for file in files:
                path = Path(root) / file
                arcname = path.relative_to(staging).as_posix()
                status = path.stat()
                data = path.read_bytes()
                info = zipfile.ZipInfo(arcname, date_time=zip_time(status.st_mtime))
                mode = stat.S_IMODE(status.st_mode) | stat.S_IFMT(status.st_mode)
                info.external_attr = mode << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                record.append(f"{arcname},sha256={digest.decode()},{len(data)}")
        record.append(f"{record_name},,")
        info = zipfile.ZipInfo(record_name, date_time=zip_time(time.time()))
        info.external_attr = 0o664 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, "\n".join(record) + "\n")
    partial.replace(wheel)
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--library", required=True, type=Path)
    parser.add_argument("--init", required=True, type=Path)
    parser.add_argument("--staging", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--flag", action="append", default=[])
    args = parser.parse_args()
    stage(args.staging, args.library, args.init, args.name, args.flag)
    args.out.mkdir(parents=True, exist_ok=True)
    write_wheel(args.staging, args.out, args.name)


if __name__ == "__main__":
    main()
