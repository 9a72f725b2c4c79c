"""Two wheels compared: which members differ, and inside shared libraries which ELF sections.

For reproducibility: two builds of one plan should give byte-identical wheels, and when they do not,
the question is where. Members are compared by the sha256 of their contents (decompressed, streamed);
a member whose bytes differ is described by its sizes and hashes and, when both sides are ELF files,
by the sections whose contents differ (pyelftools reads them). When every member's contents agree
but the files do not, the difference is in the zip layout: per member (time, mode, compression, ...)
and for the archive (member order, directory entries, comment).

Directory entries are not members here (they have no contents); a difference in them is reported as
layout. Only the two wheels are read; nothing is written but a temp directory for the ELF members.

A member that cannot be read whole (its compressed data or local header damaged: a bad CRC, a zlib
error, a stream that ends early) is a member that differs, ``corrupt`` on its side with zipfile's
words, never an exception: a wheel with one flipped byte is "not reproducible, member X is corrupt".
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import Section

from tfbuild.core.errors import InputError
from tfbuild.core.files import ZIP_MEMBER_ERRORS, sha256_file

SCHEMA: Literal["tfbuild.wheeldiff/1"] = "tfbuild.wheeldiff/1"
_ELF_MAGIC = b"\x7fELF"
_CHUNK = 1 << 20


@dataclass(frozen=True, kw_only=True)
class ElfDiff:
    """The sections of one ELF member that differ between the two wheels."""

    sections: tuple[str, ...]  # in both, their contents differ (in file order of a)
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    outside_sections: bool  # every section agrees: the ELF or program headers, or padding differ


@dataclass(frozen=True, kw_only=True)
class MemberDiff:
    """A member in both wheels whose contents differ."""

    path: str
    size_a: int  # as the zip's directory gives it
    size_b: int
    sha256_a: str | None  # None when the member is corrupt on that side
    sha256_b: str | None
    elf: ElfDiff | None  # when both sides are ELF files pyelftools can read
    corrupt_a: str | None = None  # why the member cannot be read from a (zipfile's words)
    corrupt_b: str | None = None


@dataclass(frozen=True, kw_only=True)
class EntryDiff:
    """A member whose contents agree but whose zip entry does not: the fields that differ."""

    path: str
    fields: tuple[str, ...]  # of: mtime, mode, compression, flags, made by, extra, comment


@dataclass(frozen=True, kw_only=True)
class WheelDiff:
    """What differs between wheel ``a`` and wheel ``b``: its JSON form is ``tfbuild.wheeldiff/1``."""

    schema: Literal["tfbuild.wheeldiff/1"] = SCHEMA
    a: str
    b: str
    sha256_a: str
    sha256_b: str
    equal: bool = field(init=False)  # the two files are byte-identical
    #: The same members with the same contents (the zip layout may still differ).
    same_contents: bool = field(init=False)
    only_in_a: tuple[str, ...]  # members (files), sorted
    only_in_b: tuple[str, ...]
    changed: tuple[MemberDiff, ...]  # in both, contents differ; sorted by path
    entries: tuple[EntryDiff, ...]  # in both, same contents, the zip entry differs
    layout: tuple[str, ...]  # archive-wide: member order, directory entries, archive comment, ...

    def __post_init__(self) -> None:
        object.__setattr__(self, "equal", self.sha256_a == self.sha256_b)
        same = not (self.only_in_a or self.only_in_b or self.changed)
        object.__setattr__(self, "same_contents", same)

    @property
    def corrupt(self) -> tuple[str, ...]:
        """One clause per corrupt member and side: "member X is corrupt in NAME: why"."""
        found = []
        for member in self.changed:
            for wheel, why in ((self.a, member.corrupt_a), (self.b, member.corrupt_b)):
                if why is not None:
                    found.append(f"member {member.path} is corrupt in {Path(wheel).name}: {why}")
        return tuple(found)


def compare(a: Path, b: Path) -> WheelDiff:
    sha_a, sha_b = sha256_file(a), sha256_file(b)
    with _open(a) as zip_a, _open(b) as zip_b:
        files_a = {i.filename: i for i in zip_a.infolist() if not i.is_dir()}
        files_b = {i.filename: i for i in zip_b.infolist() if not i.is_dir()}
        common = [name for name in files_a if name in files_b]
        changed: list[MemberDiff] = []
        entries: list[EntryDiff] = []
        for name in sorted(common):
            info_a, info_b = files_a[name], files_b[name]
            digest_a, elf_a, bad_a = _digest(zip_a, info_a)
            digest_b, elf_b, bad_b = _digest(zip_b, info_b)
            if digest_a != digest_b or bad_a or bad_b:
                elf = _elf_diff(zip_a, info_a, zip_b, info_b) if elf_a and elf_b else None
                changed.append(
                    MemberDiff(
                        path=name,
                        size_a=info_a.file_size,
                        size_b=info_b.file_size,
                        sha256_a=digest_a,
                        sha256_b=digest_b,
                        elf=elf,
                        corrupt_a=bad_a,
                        corrupt_b=bad_b,
                    )
                )
            elif fields := _entry_fields(info_a, info_b):
                entries.append(EntryDiff(path=name, fields=fields))
        layout = _layout(zip_a, zip_b, common)
    if sha_a != sha_b and not (changed or entries or layout) and files_a.keys() == files_b.keys():
        layout = ("zip structure (headers or compressed bytes)",)
    return WheelDiff(
        a=str(a),
        b=str(b),
        sha256_a=sha_a,
        sha256_b=sha_b,
        only_in_a=tuple(sorted(files_a.keys() - files_b.keys())),
        only_in_b=tuple(sorted(files_b.keys() - files_a.keys())),
        changed=tuple(changed),
        entries=tuple(entries),
        layout=layout,
    )


def _open(wheel: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(
            f"cannot read {wheel.name}", why=str(exc), fix="Point tfbuild at a complete wheel."
        ) from None


def _digest(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[str | None, bool, str | None]:
    """(the member's sha256 in hex, whether it is an ELF file, None), read in 1 MiB blocks (zipfile
    checks the CRC at the end); (None, False, why) when it cannot be read whole."""
    digest = hashlib.sha256()
    try:
        with archive.open(info) as member:
            first = member.read(_CHUNK)
            digest.update(first)
            for block in iter(lambda: member.read(_CHUNK), b""):
                digest.update(block)
    except ZIP_MEMBER_ERRORS as exc:
        return None, False, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return digest.hexdigest(), first.startswith(_ELF_MAGIC), None


def _entry_fields(a: zipfile.ZipInfo, b: zipfile.ZipInfo) -> tuple[str, ...]:
    """What differs in the zip entries of one member (its contents agree)."""
    pairs = {
        "mtime": (a.date_time, b.date_time),
        "mode": (a.external_attr, b.external_attr),
        "compression": ((a.compress_type, a.compress_size), (b.compress_type, b.compress_size)),
        "flags": (a.flag_bits, b.flag_bits),
        "made by": ((a.create_system, a.create_version), (b.create_system, b.create_version)),
        "extra": (a.extra, b.extra),
        "comment": (a.comment, b.comment),
    }
    return tuple(field for field, (left, right) in pairs.items() if left != right)


def _layout(a: zipfile.ZipFile, b: zipfile.ZipFile, common: list[str]) -> tuple[str, ...]:
    """Archive-wide differences: the order of the shared members, directory entries, comment."""
    shared = set(common)
    order_a, order_b = ([i.filename for i in z.infolist() if i.filename in shared] for z in (a, b))
    dirs_a, dirs_b = ([i.filename for i in z.infolist() if i.is_dir()] for z in (a, b))
    found = (
        (order_a != order_b, "member order"),
        (dirs_a != dirs_b, f"directory entries ({len(dirs_a)} in a, {len(dirs_b)} in b)"),
        (a.comment != b.comment, "archive comment"),
    )
    return tuple(what for differs, what in found if differs)


def _elf_diff(
    zip_a: zipfile.ZipFile, info_a: zipfile.ZipInfo, zip_b: zipfile.ZipFile, info_b: zipfile.ZipInfo
) -> ElfDiff | None:
    """The sections that differ, read by pyelftools from temp copies (it seeks all over the file)."""
    with tempfile.TemporaryDirectory(prefix="tfbuild-wheeldiff-") as scratch:
        path_a, path_b = Path(scratch) / "a", Path(scratch) / "b"
        for archive, info, path in ((zip_a, info_a, path_a), (zip_b, info_b, path_b)):
            with archive.open(info) as member, path.open("wb") as out:
                shutil.copyfileobj(member, out, _CHUNK)
        with path_a.open("rb") as file_a, path_b.open("rb") as file_b:
            try:
                sections_a = _section_digests(ELFFile(file_a))
                sections_b = _section_digests(ELFFile(file_b))
            except ELFError:
                return None  # not an ELF file pyelftools can read: sizes and hashes say enough
    differing = tuple(
        name for name, digest in sections_a.items() if sections_b.get(name, digest) != digest
    )
    only_a = tuple(name for name in sections_a if name not in sections_b)
    only_b = tuple(name for name in sections_b if name not in sections_a)
    return ElfDiff(
        sections=differing,
        only_in_a=only_a,
        only_in_b=only_b,
        outside_sections=not (differing or only_a or only_b),
    )


def _section_digests(elf: ELFFile) -> dict[str, str]:
    """Section name -> a digest of its contents; a repeated name gets ``#2``, ``#3``, ..."""
    digests: dict[str, str] = {}
    for section in elf.iter_sections():
        if section.is_null():
            continue
        key, count = section.name, 1
        while key in digests:
            count += 1
            key = f"{section.name}#{count}"
        digests[key] = _section_digest(section)
    return digests


def _section_digest(section: Section) -> str:
    if section["sh_type"] == "SHT_NOBITS":  # .bss: no bytes in the file, only a size
        return f"nobits:{section['sh_size']}"
    if section.compressed:
        return hashlib.sha256(section.data()).hexdigest()
    digest = hashlib.sha256()
    stream = section.stream
    stream.seek(section["sh_offset"])
    remaining = section["sh_size"]
    while remaining:
        block = stream.read(min(_CHUNK, remaining))
        if not block:
            raise ELFError(f"section {section.name} runs past the end of the file")
        digest.update(block)
        remaining -= len(block)
    return digest.hexdigest()
