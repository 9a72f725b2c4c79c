"""Give a built wheel its label and a reproducible form, copying members without recompressing them.

``relabel``: ``tensorflow_cpu-2.21.0-...whl`` -> ``tensorflow_cpu-2.21.0+x86_64v4-...whl``.
TensorFlow's build scripts have no way to add a local version label that works for every release
(``ML_WHEEL_VERSION_SUFFIX`` exists only from 2.20, for pre-release suffixes), so tfbuild stamps the
finished wheel, the same way for all of them: the file name, the ``.dist-info`` (and ``.data``)
directory, ``Version:`` in METADATA, and RECORD's hashes for what changed.

``normalise`` (or ``relabel(..., epoch=...)``, both in one pass): the wheel's zip layout stops
depending on the machine and the moment that packed it. Members are sorted by path with the
``.dist-info`` directory last and RECORD the very last (the wheel spec's recommendation), every time
is SOURCE_DATE_EPOCH's, modes are 0644 (0755 where the member had an executable bit), directory
entries go, and RECORD is written again in the members' order. Two wheels with the same member
contents come out byte-identical.

``retag`` (or ``relabel(..., platform=...)``, in the same pass): the wheel gets another platform tag,
``linux_x86_64`` -> ``manylinux_2_27_x86_64`` (the best policy ``tfbuild.wheel.floor`` found): the file
name's platform part, the ``Tag:`` lines of ``.dist-info/WHEEL``, and RECORD's hash for WHEEL. The
version, local label included, stays as it is.

Every way, every other member is copied byte for byte in its compressed form: no decompression, no
recompression, so rewriting a 270 MB TensorFlow wheel costs the time to copy it
(``benchmarks/relabel_speed.py``, ``benchmarks/normalise_wheel.py``). The result is written to a
temporary name beside the destination and renamed, so a crash never leaves a half-written wheel.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import csv
import hashlib
import io
import os
import re
import shutil
import stat
import struct
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tfbuild.core.defaults import ZIP_EPOCH
from tfbuild.core.errors import InputError, UsageError
from tfbuild.core.files import ZIP_MEMBER_ERRORS, replacing
from tfbuild.wheel.labels import labelled_version, normalised

# A local file header (APPNOTE 4.3.7): signature, version, flags, method, time, date, crc, sizes,
# name length, extra length.
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_DATA_DESCRIPTOR_FLAG = 0x08
_UTF8_FLAG = 0x800
_COPY_CHUNK = 1 << 20
_UNIX = 3  # create_system of every normalised member
_ZIP_VERSION = 20  # "made by" and "needed to extract": 2.0, deflate
# The last time an MS-DOS date and time can hold, in seconds since 1970 (UTC); the first: ZIP_EPOCH.
_ZIP_LAST = 4354819198  # 2107-12-31 23:59:58

DateTime = tuple[int, int, int, int, int, int]


def zip_time(epoch: int) -> DateTime:
    """SOURCE_DATE_EPOCH as a zip member's (UTC) date and time, clamped to what a zip can hold."""
    year, month, day, hour, minute, second = time.gmtime(min(max(epoch, ZIP_EPOCH), _ZIP_LAST))[:6]
    return year, month, day, hour, minute, second


def _damaged(what: str, why: str) -> InputError:
    return InputError(what, why=why, fix="Rebuild the wheel.")


def record_hash(data: bytes) -> str:
    """A file's hash as a wheel's RECORD writes it: ``sha256=`` and the urlsafe base64 digest."""
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


def _entry(info: zipfile.ZipInfo, name: str, stamp: DateTime | None) -> zipfile.ZipInfo:
    """The header ``info``'s copy gets: its own, or the normalised one when ``stamp`` is given."""
    entry = copy.copy(info)
    entry.filename = name
    if stamp is None:
        entry.flag_bits &= ~_DATA_DESCRIPTOR_FLAG  # the sizes go in the header
        return entry
    entry.date_time = stamp
    entry.flag_bits = 0  # bits 1-2 only say how hard deflate worked: readers ignore them
    mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
    entry.external_attr = (stat.S_IFREG | mode) << 16
    entry.internal_attr = 0
    entry.create_system = _UNIX
    entry.create_version = _ZIP_VERSION
    return entry


class _Writer:
    """A zip archive written member by member, with the central directory at the end.

    Python's zipfile cannot add already-compressed data, so the few structures needed are written
    here, following APPNOTE: no extra fields and no comments (nothing that carries a time or the
    packing machine); members over 4 GiB (never in a wheel) are refused rather than written wrongly.
    :meth:`finish` writes the central directory after the last member.
    """

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file
        self._central: list[bytes] = []

    def _header(self, entry: zipfile.ZipInfo) -> None:
        name = entry.filename.encode("utf-8")
        year, month, day, hour, minute, second = entry.date_time
        dostime = hour << 11 | minute << 5 | second // 2
        dosdate = (year - 1980) << 9 | month << 5 | day
        offset = self._file.tell()
        if max(entry.compress_size, entry.file_size, offset) >= 0xFFFFFFFF:
            raise InputError(
                f"{entry.filename} is too large to rewrite",
                why="members or archives over 4 GiB need ZIP64, which wheels do not use",
                fix="Build with --no-label.",
            )
        common = (
            _ZIP_VERSION,
            entry.flag_bits | _UTF8_FLAG,
            entry.compress_type,
            dostime,
            dosdate,
            entry.CRC,
            entry.compress_size,
            entry.file_size,
            len(name),
        )
        self._file.write(struct.pack("<4sH2H2HL2L2H", _LOCAL_SIGNATURE, *common, 0))
        self._file.write(name)
        self._central.append(
            struct.pack(
                "<4s2H2H2HL2L5H2L",
                b"PK\x01\x02",
                entry.create_version | (entry.create_system << 8),
                *common,
                0,  # extra
                0,  # comment
                0,  # disk
                entry.internal_attr,
                entry.external_attr,
                offset,
            )
            + name
        )

    def copy(self, source: zipfile.ZipFile, info: zipfile.ZipInfo, entry: zipfile.ZipInfo) -> None:
        """Copy one member's compressed bytes under ``entry``'s header (no inflate, no deflate)."""
        fp = source.fp
        assert fp is not None
        fp.seek(info.header_offset)
        header = _LOCAL_HEADER.unpack(fp.read(_LOCAL_HEADER.size))
        if header[0] != _LOCAL_SIGNATURE:
            raise _damaged(
                f"the wheel's member {info.filename} has a bad local header",
                "the zip archive is damaged",
            )
        fp.seek(header[-2] + header[-1], os.SEEK_CUR)  # skip the local name and extra field
        self._header(entry)
        remaining = entry.compress_size
        while remaining:
            chunk = fp.read(min(_COPY_CHUNK, remaining))
            if not chunk:
                raise _damaged(
                    f"the wheel's member {entry.filename} is truncated",
                    "the zip archive ends early",
                )
            self._file.write(chunk)
            remaining -= len(chunk)

    def add_bytes(self, entry: zipfile.ZipInfo, content: bytes) -> None:
        """``content`` deflated, under ``entry``'s name, time and mode."""
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)  # raw deflate, as zip stores it
        packed = compressor.compress(content) + compressor.flush()
        entry.compress_type = zipfile.ZIP_DEFLATED
        entry.flag_bits = 0
        entry.CRC = zlib.crc32(content)
        entry.file_size = len(content)
        entry.compress_size = len(packed)
        self._header(entry)
        self._file.write(packed)

    def finish(self) -> None:
        start = self._file.tell()
        for record in self._central:
            self._file.write(record)
        size = self._file.tell() - start
        count = len(self._central)
        self._file.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, size, start, 0))


def relabel(
    wheel: Path,
    label: str,
    dest_dir: Path,
    *,
    epoch: int | None = None,
    platform: str | None = None,
) -> Path:
    """Write ``wheel`` with ``+label`` added to its version into ``dest_dir``; return the new path.

    With ``epoch`` (SOURCE_DATE_EPOCH) the result is also normalised, and with ``platform`` also
    retagged (see :func:`normalise`, :func:`retag`), all in the same pass. A wheel that already
    carries the label (and the platform tag) is copied as it is (or only normalised).
    """
    _, version, rest = _split_name(wheel)
    new_version = version if has_label(version, label) else labelled_version(version, label)
    if platform is not None and platform == rest.rpartition("-")[2]:
        platform = None  # already the wheel's tag
    if new_version == version and epoch is None and platform is None:
        target = dest_dir / wheel.name
        with replacing(target, mode=stat.S_IMODE(wheel.stat().st_mode)) as partial:
            shutil.copyfile(wheel, partial)
            _same_owner(wheel, partial)
        return target
    return _rewrite(wheel, dest_dir, new_version, epoch, platform)


def retag(wheel: Path, platform: str, out_dir: Path) -> Path:
    """Write ``wheel`` with the platform tag ``platform`` (a tag, or a compressed tag set: dots
    between tags) into ``out_dir``; return the new path. Retagging to the tag the wheel has is a
    rewrite all the same (WHEEL then says it too)."""
    return _rewrite(wheel, out_dir, _split_name(wheel)[1], None, platform)


def normalise(wheel: Path, out_dir: Path, *, epoch: int) -> Path:
    """Write ``wheel``, normalised on ``epoch`` (SOURCE_DATE_EPOCH, UTC, clamped to what a zip holds),
    into ``out_dir`` under the same name; return the new path. ``out_dir`` may be the wheel's own
    directory."""
    return _rewrite(wheel, out_dir, _split_name(wheel)[1], epoch)


def _rewrite(
    wheel: Path,
    dest_dir: Path,
    new_version: str,
    epoch: int | None,
    platform: str | None = None,
) -> Path:
    """The one zip walk behind relabel, normalise and retag: rename to ``new_version``, normalise
    on ``epoch``, retag to ``platform``."""
    name, version, rest = _split_name(wheel)
    if platform is not None:
        tags, _, current = rest.rpartition("-")
        rest = f"{tags}-{_checked_platform(wheel, current, platform)}"
    target = dest_dir / f"{name}-{new_version}-{rest}.whl"
    try:
        source = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise _damaged(f"cannot read {wheel.name}", str(exc)) from None
    with source, replacing(target, mode=stat.S_IMODE(wheel.stat().st_mode)) as partial:
        members = source.infolist()
        old_prefix = _dist_info(wheel, members, version)[: -len(".dist-info")]
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
        replaced: dict[str, bytes] = {}
        if new_version != version:
            replaced[metadata_name] = _metadata_with_version(
                _read(source, metadata_name), new_version
            )
        if platform is not None:
            wheel_name = f"{old_prefix}.dist-info/WHEEL"
            untagged = _read(source, wheel_name)
            tagged = _wheel_with_platform(untagged, platform)
            if tagged != untagged:
                replaced[wheel_name] = tagged
        # RECORD goes last, as the wheel spec recommends; normalised, the rest is sorted by path
        # with the .dist-info directory last, and directory entries go.
        kept = [m for m in members if m.filename != record_name]
        stamp = None if epoch is None else zip_time(epoch)
        if stamp is not None:
            dist_info_dir = f"{new_prefix}.dist-info/"
            kept = [m for m in kept if not m.is_dir()]
            kept.sort(
                key=lambda m: (renamed(m.filename).startswith(dist_info_dir), renamed(m.filename))
            )
        record = _record(source, kept, renamed, replaced, record_name)
        with partial.open("wb") as file:
            out = _Writer(file)
            for info in kept:
                entry = _entry(info, renamed(info.filename), stamp)
                if info.filename in replaced:
                    out.add_bytes(entry, replaced[info.filename])
                else:
                    out.copy(source, info, entry)
            out.add_bytes(_entry(source.getinfo(record_name), renamed(record_name), stamp), record)
            out.finish()
        _same_owner(wheel, partial)
    return target


# A platform tag as PEP 425 spells it (lower case, "_" for "-" and "."), and the architecture part of
# the Linux ones: linux_x86_64, manylinux1_x86_64, manylinux2014_aarch64, manylinux_2_27_x86_64.
_PLATFORM = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")
_LINUX_ARCH = re.compile(r"(?:many|musl)?linux(?:1|2010|2014|_\d+_\d+)?_(?P<arch>[a-z0-9_]+)")


def _checked_platform(wheel: Path, current: str, platform: str) -> str:
    """``platform``, when it is a tag set for the machine of the wheel's ``current`` tags."""
    if not _PLATFORM.fullmatch(platform):
        raise UsageError(
            f"{platform!r} is not a platform tag",
            why="a platform tag is lower-case letters, digits and '_' (tags of a set joined by '.')",
            fix="Give a tag such as manylinux_2_27_x86_64.",
        )

    def machines(tags: str) -> set[str]:
        return {m["arch"] for tag in tags.split(".") if (m := _LINUX_ARCH.fullmatch(tag))}

    theirs, ours = machines(current), machines(platform)
    if theirs and ours and theirs != ours:
        raise UsageError(
            f"cannot retag {wheel.name} as {platform}",
            why=f"the wheel is for {', '.join(sorted(theirs))}, the tag for {', '.join(sorted(ours))}",
            fix="Give a platform tag for the wheel's own machine.",
        )
    return platform


def _wheel_with_platform(text: bytes, platform: str) -> bytes:
    """WHEEL with its ``Tag:`` lines (``py-abi-platform``) for ``platform``, where the first was."""
    lines = text.splitlines(keepends=True)
    ending = b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"
    kept: list[bytes] = []
    pairs: list[bytes] = []  # the Python and ABI tags, in their first order
    first = -1
    for line in lines:
        key, sep, value = line.partition(b":")
        if not sep or key.strip().lower() != b"tag":
            kept.append(line)
            continue
        pair, dash, _ = value.strip().rpartition(b"-")
        if not dash or pair.count(b"-") != 1:
            raise _damaged(
                f"the wheel's WHEEL has a malformed tag: {value.strip().decode(errors='replace')}",
                "a tag is PYTHON-ABI-PLATFORM",
            )
        if first < 0:
            first = len(kept)
        if pair not in pairs:
            pairs.append(pair)
    if first < 0:
        raise _damaged("the wheel's WHEEL has no Tag line", "WHEEL names the tags the wheel is for")
    tags = [
        b"Tag: " + pair + b"-" + tag.encode("ascii") + ending
        for pair in pairs
        for tag in platform.split(".")
    ]
    return b"".join(kept[:first] + tags + kept[first:])


def _dist_info(wheel: Path, members: list[zipfile.ZipInfo], version: str) -> str:
    """The wheel's own top-level ``.dist-info`` directory (for ``version``)."""
    names = [m.filename for m in members]
    if len(set(names)) != len(names):
        raise _damaged(f"{wheel.name} holds a member twice", "which copy pip installs is undefined")
    tops = {n.split("/", 1)[0] for n in names}
    dist_infos = sorted(t for t in tops if t.endswith(".dist-info"))
    found = [t for t in dist_infos if normalised(t[:-10]).endswith(normalised(version))]
    if len(found) != 1:
        raise _damaged(
            f"{wheel.name} has no single .dist-info directory for version {version}",
            f"found {', '.join(dist_infos) or 'none'}",
        )
    return found[0]


def _read(source: zipfile.ZipFile, name: str) -> bytes:
    try:
        return _member(source, source.getinfo(name))
    except KeyError:
        raise _damaged(
            f"the wheel has no {name}", "every wheel's .dist-info holds METADATA and RECORD"
        ) from None


def _member(source: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes (zipfile checks its CRC); a damaged one is one line naming it."""
    try:
        return source.read(info)
    except ZIP_MEMBER_ERRORS as exc:
        raise _damaged(
            f"the wheel's member {info.filename} is corrupt", f"{type(exc).__name__}: {exc}"
        ) from None


def _same_owner(original: Path, copy: Path) -> None:
    """The new wheel keeps the original's owner where we may set it (as root); ``replacing`` sets the mode."""
    status = original.stat()
    if (status.st_uid, status.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):
            os.chown(copy, status.st_uid, status.st_gid)


def _record(
    source: zipfile.ZipFile,
    members: list[zipfile.ZipInfo],
    rename: Callable[[str], str],
    replaced: dict[str, bytes],
    record_name: str,
) -> bytes:
    """RECORD for ``members`` in their order, then itself: each row's hash from the old RECORD.

    A rewritten member (METADATA) is hashed again, and so is one the old RECORD leaves out; a row
    whose size disagrees with the member is an error (the wheel is damaged).
    """
    listed = {
        row[0]: row
        for row in csv.reader(io.StringIO(_read(source, record_name).decode("utf-8")))
        if row
    }
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for info in members:
        if info.is_dir():
            continue  # directories are not listed
        row = listed.get(info.filename, [])
        if info.filename in replaced or len(row) < 3 or not row[1]:
            data = replaced[info.filename] if info.filename in replaced else _member(source, info)
            writer.writerow([rename(info.filename), record_hash(data), str(len(data))])
            continue
        if row[2] not in ("", str(info.file_size)):
            raise _damaged(
                f"the wheel's RECORD gives {info.filename} {row[2]} bytes, the member has "
                f"{info.file_size}",
                "RECORD and the archive disagree: the wheel is damaged",
            )
        writer.writerow([rename(info.filename), row[1], str(info.file_size)])
    writer.writerow([rename(record_name), "", ""])
    return buffer.getvalue().encode("utf-8")
