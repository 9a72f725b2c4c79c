"""Small, valid stand-in wheels: shared by the label, index and pick tests (their HTTP server is
tests/http_server.py).

The wheels are real (a module, METADATA, WHEEL and a RECORD with true hashes): pip installs them,
zipfile and ``sha256sum`` check them. They are STAND-INs, not TensorFlow.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def record_hash(data: bytes) -> str:
    """A RECORD hash: ``sha256=`` and the urlsafe base64 digest without padding."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def make_wheel(
    directory: Path, filename: str, *, module: str | None = None, module_text: str | None = None
) -> Path:
    """A valid wheel named ``filename``: ``module/__init__.py`` (default: the distribution's name)."""
    distribution, version, *rest = filename[: -len(".whl")].split("-")
    tag = "-".join(rest[-3:])
    dist_info = f"{distribution}-{version}.dist-info"
    purelib = "true" if tag.endswith("-none-any") else "false"
    files = {
        f"{module or distribution}/__init__.py": (
            module_text if module_text is not None else f"VERSION = {version!r}\n"
        ).encode(),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
            "Summary: STAND-IN wheel for tfbuild's tests (not TensorFlow)\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tfbuild-tests\n"
            f"Root-Is-Purelib: {purelib}\nTag: {tag}\n"
        ).encode(),
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    record += f"{dist_info}/RECORD,,\n"
    path = directory / filename
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{dist_info}/RECORD", record)
    return path


def flip_compressed_byte(wheel: Path, member: str, *, where: str = "middle") -> int:
    """Invert one byte of ``member`` in the wheel file, in place: in the middle of its compressed
    data (``where="middle"``), its first byte (``"start"``: a deflate stream's block header), or
    the first byte of its local header's signature (``"header"``). The zip's directory is
    untouched, so the archive still opens. The byte's offset is returned."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
    raw = bytearray(wheel.read_bytes())
    start = info.header_offset
    if where == "header":
        offset = start
    else:
        name_length = int.from_bytes(raw[start + 26 : start + 28], "little")
        extra_length = int.from_bytes(raw[start + 28 : start + 30], "little")
        offset = start + 30 + name_length + extra_length
        offset += info.compress_size // 2 if where == "middle" else 0
    raw[offset] ^= 0xFF
    wheel.write_bytes(bytes(raw))
    return offset
