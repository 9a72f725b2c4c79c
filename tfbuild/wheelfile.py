"""Give a built wheel its label: ``tensorflow_cpu-2.21.0-...whl`` -> ``tensorflow_cpu-2.21.0+x86_64v4-...whl``.

TensorFlow's build scripts have no way to add a local version label that works for every release
(``ML_WHEEL_VERSION_SUFFIX`` exists only from 2.20, for pre-release suffixes), so tfbuild stamps the
finished wheel, the same way for all of them: the file name, the ``.dist-info`` (and ``.data``)
directory, ``Version:`` in METADATA, and RECORD's hashes for what changed. Every other member is
copied byte for byte in its compressed form: no decompression, no recompression, so stamping a
250 MB TensorFlow wheel costs the time to copy it (``benchmarks/relabel_speed.py``).

The result is written to a temporary name beside the destination and renamed, so a crash never
leaves a half-written wheel.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import os
import re
import shutil
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tfbuild.errors import InputError
from tfbuild.labels import labelled_version, normalised

# A local file header (APPNOTE 4.3.7): signature, version, flags, method, time, date, crc, sizes,
# name length, extra length.
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_DATA_DESCRIPTOR_FLAG = 0x08
_COPY_CHUNK = 1 << 20


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _split_name(wheel: Path) -> tuple[str, str, str]:
    """``name-version-rest.whl`` -> (name, version, rest) as spelt in the file name."""
    stem = wheel.name.removesuffix(".whl")
    parts = stem.split("-")
    if not wheel.name.endswith(".whl") or len(parts) < 5:
        raise InputError(
            f"{wheel.name} is not a wheel file name",
            why="a wheel is named NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl",
            fix="Point tfbuild at the .whl the build produced.",
        )
    return parts[0], parts[1], "-".join(parts[2:])


def has_label(version: str, label: str) -> bool:
    """Whether ``version``'s local part already ends with ``label`` (PEP 440 spellings alike)."""
    if "+" not in version:
        return False
    local = normalised(version.partition("+")[2])
    wanted = normalised(label)
    return local == wanted or local.endswith("." + wanted)


def _metadata_with_version(text: bytes, version: str) -> bytes:
    head, sep, body = text.partition(b"\n\n")
    new_head, count = re.subn(
        rb"^Version:[^\r\n]*", b"Version: " + version.encode("ascii"), head, count=1, flags=re.M
    )
    if count != 1:
        raise InputError(
            "the wheel's METADATA has no Version field",
            why="every wheel's METADATA names its version",
            fix="The wheel is damaged: rebuild it.",
        )
    return new_head + sep + body


def _copy_raw(source: zipfile.ZipFile, info: zipfile.ZipInfo, new_name: str, out: _Writer) -> None:
    """Copy one member's compressed bytes under a new name (no inflate, no deflate)."""
    fp = source.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = _LOCAL_HEADER.unpack(fp.read(_LOCAL_HEADER.size))
    if header[0] != _LOCAL_SIGNATURE:
        raise InputError(
            f"the wheel's member {info.filename} has a bad local header",
            why="the zip archive is damaged",
            fix="Rebuild the wheel.",
        )
    fp.seek(header[-2] + header[-1], os.SEEK_CUR)  # skip the local name and extra field
    out.add_raw(info, new_name, fp)


class _Writer:
    """A zip archive written member by member, with the central directory at the end.

    Python's zipfile cannot add already-compressed data, so the few structures needed are written
    here, following APPNOTE; members over 4 GiB (never in a wheel) are refused rather than
    written wrongly.
    """

    def __init__(self, path: Path) -> None:
        self._file = path.open("wb")
        self._central: list[bytes] = []

    def _header(self, info: zipfile.ZipInfo, name: bytes, flags: int) -> None:
        dostime = info.date_time[3] << 11 | info.date_time[4] << 5 | info.date_time[5] // 2
        dosdate = (info.date_time[0] - 1980) << 9 | info.date_time[1] << 5 | info.date_time[2]
        offset = self._file.tell()
        if max(info.compress_size, info.file_size, offset) >= 0xFFFFFFFF:
            raise InputError(
                f"{info.filename} is too large to relabel",
                why="members or archives over 4 GiB need ZIP64, which wheels do not use",
                fix="Build with --no-label.",
            )
        common = (
            20,
            flags,
            info.compress_type,
            dostime,
            dosdate,
            info.CRC,
            info.compress_size,
            info.file_size,
            len(name),
        )
        self._file.write(struct.pack("<4sH2H2HL2L2H", _LOCAL_SIGNATURE, *common, 0))
        self._file.write(name)
        self._central.append(
            struct.pack(
                "<4s2H2H2HL2L5H2L",
                b"PK\x01\x02",
                info.create_version | (info.create_system << 8),
                *common,
                0,  # extra
                0,  # comment
                0,  # disk
                info.internal_attr,
                info.external_attr,
                offset,
            )
            + name
        )

    def add_raw(self, info: zipfile.ZipInfo, new_name: str, data: IO[bytes]) -> None:
        flags = (info.flag_bits & ~_DATA_DESCRIPTOR_FLAG) | 0x800  # sizes in the header; UTF-8 name
        self._header(info, new_name.encode("utf-8"), flags)
        remaining = info.compress_size
        while remaining:
            chunk = data.read(min(_COPY_CHUNK, remaining))
            if not chunk:
                raise InputError(
                    f"the wheel's member {info.filename} is truncated",
                    why="the zip archive ends early",
                    fix="Rebuild the wheel.",
                )
            self._file.write(chunk)
            remaining -= len(chunk)

    def add_bytes(self, info: zipfile.ZipInfo, new_name: str, content: bytes) -> None:
        packed = _deflate(content)
        member = zipfile.ZipInfo(new_name, date_time=info.date_time)
        member.compress_type = zipfile.ZIP_DEFLATED
        member.external_attr = info.external_attr
        member.create_system = info.create_system
        member.create_version = info.create_version
        member.CRC = zlib.crc32(content)
        member.file_size = len(content)
        member.compress_size = len(packed)
        self._header(member, new_name.encode("utf-8"), 0x800)
        self._file.write(packed)

    def close(self) -> None:
        start = self._file.tell()
        for entry in self._central:
            self._file.write(entry)
        size = self._file.tell() - start
        count = len(self._central)
        self._file.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, size, start, 0))
        self._file.close()

    def abandon(self) -> None:
        self._file.close()


def _deflate(content: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(content) + compressor.flush()


def relabel(wheel: Path, label: str, dest_dir: Path) -> Path:
    """Write ``wheel`` with ``+label`` added to its version into ``dest_dir``; return the new path.

    A wheel that already carries the label is copied as it is.
    """
    name, version, rest = _split_name(wheel)
    new_version = version if has_label(version, label) else labelled_version(version, label)
    target = dest_dir / f"{name}-{new_version}-{rest}.whl"
    partial = dest_dir / f".{target.name}.partial"
    if new_version == version:
        shutil.copyfile(wheel, partial)
        _same_owner(wheel, partial)
        partial.replace(target)
        return target
    try:
        source = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(
            f"cannot read {wheel.name}", why=str(exc), fix="Rebuild the wheel."
        ) from None
    with source:
        members = source.infolist()
        tops = {m.filename.split("/", 1)[0] for m in members}
        dist_info = [
            t
            for t in tops
            if t.endswith(".dist-info") and normalised(t[:-10]).endswith(normalised(version))
        ]
        if len(dist_info) != 1:
            raise InputError(
                f"{wheel.name} has no single .dist-info directory for version {version}",
                why=f"found {', '.join(sorted(t for t in tops if t.endswith('.dist-info'))) or 'none'}",
                fix="Rebuild the wheel.",
            )
        old_prefix = dist_info[0][: -len(".dist-info")]
        new_prefix = (
            f"{old_prefix[: -len(version)]}{new_version}"
            if old_prefix.endswith(version)
            else f"{name}-{new_version}"
        )
        renames = {
            f"{old_prefix}.dist-info": f"{new_prefix}.dist-info",
            f"{old_prefix}.data": f"{new_prefix}.data",
        }

        def renamed(member: str) -> str:
            top, sep, inner = member.partition("/")
            return renames.get(top, top) + sep + inner

        metadata_name = f"{old_prefix}.dist-info/METADATA"
        record_name = f"{old_prefix}.dist-info/RECORD"
        metadata = _metadata_with_version(source.read(metadata_name), new_version)
        record = _rewritten_record(
            source.read(record_name).decode("utf-8"), renamed, renamed(metadata_name), metadata
        )
        out = _Writer(partial)
        try:
            for info in members:
                if info.filename == metadata_name:
                    out.add_bytes(info, renamed(info.filename), metadata)
                elif info.filename == record_name:
                    continue  # RECORD goes last, as the wheel spec recommends
                else:
                    _copy_raw(source, info, renamed(info.filename), out)
            out.add_bytes(source.getinfo(record_name), renamed(record_name), record)
            out.close()
        except BaseException:
            out.abandon()
            partial.unlink(missing_ok=True)
            raise
    _same_owner(wheel, partial)
    partial.replace(target)
    return target


def _same_owner(original: Path, copy: Path) -> None:
    """The new wheel keeps the original's mode, and its owner where we may set it (as root)."""
    shutil.copymode(original, copy)
    stat = original.stat()
    if (stat.st_uid, stat.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):
            os.chown(copy, stat.st_uid, stat.st_gid)


def _rewritten_record(
    text: str, rename: Callable[[str], str], metadata_path: str, metadata: bytes
) -> bytes:
    rows = list(csv.reader(io.StringIO(text)))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        if not row:
            continue
        path = rename(row[0])
        if path == metadata_path:
            writer.writerow([path, _record_hash(metadata), str(len(metadata))])
        else:
            writer.writerow([path, *row[1:]])
    return buffer.getvalue().encode("utf-8")
