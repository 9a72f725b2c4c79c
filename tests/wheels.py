"""Small, valid stand-in wheels, and the one way tests write a zip: shared by the wheel, index, pick
and smoke tests (their HTTP server is tests/http_server.py).

The wheels are real (a module, METADATA, WHEEL and a RECORD with true hashes): pip installs them,
zipfile and ``sha256sum`` check them. They are STAND-INs, not TensorFlow. Every member has the same
fixed time and mode unless asked otherwise, so the same members make the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

#: Every member's time unless a caller says otherwise (a zip holds local times, to 2 s).
ZIP_TIME = (2026, 1, 2, 3, 4, 6)


def record_hash(data: bytes) -> str:
    """A RECORD hash: ``sha256=`` and the urlsafe base64 digest without padding."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def record(members: Mapping[str, bytes], name: str) -> bytes:
    """The RECORD ``name`` of ``members``: each with its hash and size, in order (``name`` itself,
    if it is among them, skipped), then ``name`` without either, as pip writes it."""
    rows = [f"{n},{record_hash(data)},{len(data)}\n" for n, data in members.items() if n != name]
    return "".join([*rows, f"{name},,\n"]).encode()


class _Unseekable(io.RawIOBase):
    """A write-only stream: zipfile then writes a data descriptor after each member."""

    def __init__(self, sink: io.BytesIO) -> None:
        self.sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return self.sink.write(data)


def members_of(path: Path) -> dict[str, bytes]:
    """A zip's members, name -> bytes, in their order: what a test changes before :func:`pack`."""
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def pack(
    path: Path,
    members: Mapping[str, bytes],
    *,
    date_time: tuple[int, int, int, int, int, int] = ZIP_TIME,
    mode: int = 0o644,
    modes: Mapping[str, int] | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
    stored: Collection[str] = (),
    directories: tuple[str, ...] = (),
    comment: bytes = b"",
    descriptors: bool = False,
) -> Path:
    """A zip at ``path`` of ``members`` (name -> bytes) in the order given: ``directories`` entries
    first, every member with ``date_time``, a regular file's ``mode`` (or its own in ``modes``),
    ``compression`` (but ZIP_STORED for the names in ``stored``), the archive's ``comment``; with
    ``descriptors``, sizes and CRCs in data descriptors after each member, as a writer that cannot
    seek writes them. No RECORD is made: :func:`make_wheel` makes wheels."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    target: io.BytesIO | _Unseekable = _Unseekable(buffer) if descriptors else buffer
    with zipfile.ZipFile(target, "w", compression=compression) as archive:  # type: ignore[arg-type]
        for directory in directories:
            archive.writestr(zipfile.ZipInfo(directory, date_time=date_time), b"")
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.compress_type = zipfile.ZIP_STORED if name in stored else compression
            info.external_attr = (0o100000 | (modes or {}).get(name, mode)) << 16
            archive.writestr(info, data)
        archive.comment = comment
    path.write_bytes(buffer.getvalue())
    return path


def make_wheel(
    directory: Path,
    filename: str,
    *,
    module: str | None = None,
    module_text: str | None = None,
    members: Mapping[str, bytes] | None = None,
    requires: Sequence[str] = (),
    description: str = "",
    modes: Mapping[str, int] | None = None,
    stored: Collection[str] = (),
    descriptors: bool = False,
) -> Path:
    """A valid wheel named ``filename`` in ``directory``: ``module/__init__.py`` (default: the
    distribution's name; its text ``VERSION = '...'``), then ``members`` (more files: a library, a
    ``.data`` script), METADATA (a Requires-Dist line for each of ``requires``, its body
    ``description``), WHEEL (the file name's tag; purelib for ``none-any``) and RECORD. ``modes``,
    ``stored`` and ``descriptors`` as :func:`pack` takes them."""
    distribution, version, *rest = filename[: -len(".whl")].split("-")
    tag = "-".join(rest[-3:])
    dist_info = f"{distribution}-{version}.dist-info"
    purelib = "true" if tag.endswith("-none-any") else "false"
    metadata = (
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
        "Summary: STAND-IN wheel for tfbuild's tests (not TensorFlow)\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    files = {
        f"{module or distribution}/__init__.py": (
            module_text if module_text is not None else f"VERSION = {version!r}\n"
        ).encode(),
        **(members or {}),
        f"{dist_info}/METADATA": (metadata + (f"\n{description}" if description else "")).encode(),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tfbuild-tests\n"
            f"Root-Is-Purelib: {purelib}\nTag: {tag}\n"
        ).encode(),
    }
    files[f"{dist_info}/RECORD"] = record(files, f"{dist_info}/RECORD")
    return pack(directory / filename, files, modes=modes, stored=stored, descriptors=descriptors)


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
