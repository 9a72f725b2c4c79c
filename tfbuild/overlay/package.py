"""The overlay's wheel: the loader in ``tensorflow-plugins/``, the kernels and their manifest beside
it, written byte for byte the same from the same inputs.

Members are sorted, dated :data:`tfbuild.core.defaults.ZIP_EPOCH`, deflated at one level, with no
extra fields: the archive's bytes depend on the members' bytes only. The wheel is
``py3-none-<platform>``: nothing in it depends on Python's ABI. Its metadata requires the exact
TensorFlow distribution and release it was built against, so pip refuses to install it beside
another, and the loader refuses to load beside another anyway.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.defaults import ZIP_EPOCH
from tfbuild.wheel.wheelfile import record_hash, zip_time

DISTRIBUTION = "tfbuild-overlay"
PLUGINS = "tensorflow-plugins"
MANIFEST = "overlay.json"


@dataclass(frozen=True, kw_only=True)
class WheelName:
    version: str  # "2.21.0+x86_64v4"
    platform: str  # "manylinux_2_17_x86_64"

    @property
    def filename(self) -> str:
        return f"{DISTRIBUTION.replace('-', '_')}-{self.version}-py3-none-{self.platform}.whl"

    @property
    def dist_info(self) -> str:
        return f"{DISTRIBUTION.replace('-', '_')}-{self.version}.dist-info"


def members(
    name: WheelName, *, files: Mapping[str, bytes], requires: str, summary: str
) -> dict[str, bytes]:
    """Every member of the wheel, ``files`` (paths under site-packages) plus its dist-info."""
    out = dict(sorted(files.items()))
    info = name.dist_info
    out[f"{info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        f"Name: {DISTRIBUTION}\n"
        f"Version: {name.version}\n"
        f"Summary: {summary}\n"
        f"Requires-Dist: {requires}\n"
    ).encode()
    out[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\n"
        "Generator: tfbuild overlay\n"
        "Root-Is-Purelib: false\n"
        f"Tag: py3-none-{name.platform}\n"
    ).encode()
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data in out.items())
    out[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    return out


def write_wheel(path: Path, content: Mapping[str, bytes], *, executable: frozenset[str]) -> None:
    """``content`` as a zip archive at ``path``; ``executable`` members get mode 755 (shared objects)."""
    stamp = zip_time(ZIP_EPOCH)
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in content.items():
            info = zipfile.ZipInfo(member, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix: the mode below is read
            info.external_attr = (0o100755 if member in executable else 0o100644) << 16
            archive.writestr(info, data, compresslevel=6)
