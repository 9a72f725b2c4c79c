"""Comparing wheels: real zip files, real shared libraries compiled here with the system gcc."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests import wheels
from tests.wheels import pack
from tfbuild.core import serial
from tfbuild.core.errors import InputError
from tfbuild.wheel.wheeldiff import compare
from tfbuild.wheel.wheelfile import normalise

NAME = "tfbuild_standin-2.21.0-cp311-cp311-linux_x86_64.whl"
LIBRARY = "tfbuild_standin/_native.so"
SOURCE = """
const char *greeting(void) { return "%s"; }
int add(int a, int b) { return a * 3 + b; }
"""


def compile_library(directory: Path, text: str) -> bytes:
    """A tiny shared library whose one string constant is ``text`` (no build id: only .rodata moves)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs the system gcc to compile a shared library")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "native.c").write_text(SOURCE % text)
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-O2", "-Wl,--build-id=none", "-o", "native.so", "native.c"],
        cwd=directory,
        check=True,
    )
    return (directory / "native.so").read_bytes()


def members(library: bytes) -> dict[str, bytes]:
    return {
        "tfbuild_standin/__init__.py": b"from ._native import *\n",
        LIBRARY: library,
        "tfbuild_standin-2.21.0.dist-info/METADATA": b"Metadata-Version: 2.1\n"
        b"Name: tfbuild_standin\nVersion: 2.21.0\n",
        "tfbuild_standin-2.21.0.dist-info/RECORD": b"",
    }


def test_libraries_that_differ_in_a_string_differ_in_rodata_only(tmp_path: Path) -> None:
    library_a = compile_library(tmp_path / "a", "hello from build A")
    library_b = compile_library(tmp_path / "b", "hello from build B")
    assert library_a != library_b
    a = pack(tmp_path / "wa" / NAME, members(library_a))
    b = pack(tmp_path / "wb" / NAME, members(library_b))
    diff = compare(a, b)
    assert not diff.equal
    assert not diff.same_contents
    assert (diff.only_in_a, diff.only_in_b, diff.entries, diff.layout) == ((), (), (), ())
    [member] = diff.changed
    assert member.path == LIBRARY
    assert member.size_a == member.size_b == len(library_a)
    assert member.sha256_a == hashlib.sha256(library_a).hexdigest()
    assert member.sha256_b == hashlib.sha256(library_b).hexdigest()
    assert member.elf is not None
    assert member.elf.sections == (".rodata",)
    assert (member.elf.only_in_a, member.elf.only_in_b) == ((), ())
    assert not member.elf.outside_sections
    report = json.loads(json.dumps(serial.to_data(diff)))
    assert report["schema"] == "tfbuild.wheeldiff/1"
    assert report["changed"][0]["elf"]["sections"] == [".rodata"]
    assert report["equal"] is False


def test_one_byte_flipped_in_text_names_the_member_and_text(tmp_path: Path) -> None:
    library = compile_library(tmp_path / "lib", "the same string")
    with (tmp_path / "lib" / "native.so").open("rb") as handle:
        text = ELFFile(handle).get_section_by_name(".text")
        assert text is not None
        offset = text["sh_offset"] + text["sh_size"] // 2
    flipped = bytearray(library)
    flipped[offset] ^= 0xFF
    a = pack(tmp_path / "wa" / NAME, members(library))
    b = pack(tmp_path / "wb" / NAME, members(bytes(flipped)))
    diff = compare(a, b)
    assert [m.path for m in diff.changed] == [LIBRARY]
    elf = diff.changed[0].elf
    assert elf is not None
    assert elf.sections == (".text",)


def test_members_in_one_wheel_only_and_a_changed_text_file(tmp_path: Path) -> None:
    library = compile_library(tmp_path / "lib", "the same string")
    files = members(library)
    a = pack(tmp_path / "wa" / NAME, {**files, "tfbuild_standin/only_a.py": b"A = 1\n"})
    b = pack(
        tmp_path / "wb" / NAME,
        {
            **files,
            "tfbuild_standin/__init__.py": b"from ._native import greeting\n",
            "tfbuild_standin/only_b.py": b"B = 2\n",
        },
    )
    diff = compare(a, b)
    assert diff.only_in_a == ("tfbuild_standin/only_a.py",)
    assert diff.only_in_b == ("tfbuild_standin/only_b.py",)
    [member] = diff.changed
    assert member.path == "tfbuild_standin/__init__.py"
    assert member.elf is None  # not an ELF file: sizes and hashes only
    assert (member.size_a, member.size_b) == (
        len(files["tfbuild_standin/__init__.py"]),
        len(b"from ._native import greeting\n"),
    )
    assert not diff.same_contents


def test_same_contents_in_another_layout_is_said_and_normalising_removes_it(
    tmp_path: Path,
) -> None:
    files = members(compile_library(tmp_path / "lib", "the same string"))
    a = pack(tmp_path / "wa" / NAME, files, directories=("tfbuild_standin/",))
    b = pack(
        tmp_path / "wb" / NAME,
        dict(reversed(files.items())),
        date_time=(2025, 6, 7, 8, 9, 10),
        mode=0o664,
    )
    diff = compare(a, b)
    assert not diff.equal
    assert diff.same_contents
    assert diff.changed == ()
    assert {e.path for e in diff.entries} == set(files)
    assert {e.fields for e in diff.entries} == {("mtime", "mode")}
    assert diff.layout == ("member order", "directory entries (1 in a, 0 in b)")
    # The same wheel twice is equal; both normalised, they are too.
    assert compare(a, a).equal
    same = compare(
        normalise(a, tmp_path / "na", epoch=1_767_323_045),
        normalise(b, tmp_path / "nb", epoch=1_767_323_045),
    )
    assert same.equal
    assert (same.changed, same.entries, same.layout) == ((), (), ())


def test_a_file_that_is_no_zip_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / NAME
    broken.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="cannot read"):
        compare(broken, broken)


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("middle", "BadZipFile: Bad CRC-32 for file 'tfbuild_standin/__init__.py'"),
        ("start", "error: Error -3 while decompressing data"),  # zlib.error
        ("header", "BadZipFile: Bad magic number for file header"),
    ],
)
def test_a_member_with_a_flipped_byte_is_corrupt_not_an_exception(
    tmp_path: Path, where: str, said: str
) -> None:
    """Issue 21, item 3: one flipped byte in a member's compressed data (or its local header)."""
    (tmp_path / "a").mkdir()
    good = wheels.make_wheel(tmp_path / "a", NAME, module_text="VALUE = 'x' * 64\n" * 20)
    bad = tmp_path / "b" / NAME
    bad.parent.mkdir()
    shutil.copyfile(good, bad)
    wheels.flip_compressed_byte(bad, "tfbuild_standin/__init__.py", where=where)
    diff = compare(good, bad)
    assert not diff.equal and not diff.same_contents
    [member] = diff.changed
    assert member.path == "tfbuild_standin/__init__.py"
    assert member.corrupt_a is None and member.sha256_a is not None
    assert member.corrupt_b is not None and member.corrupt_b.startswith(said)
    assert member.sha256_b is None
    assert diff.corrupt == (
        f"member tfbuild_standin/__init__.py is corrupt in {NAME}: {member.corrupt_b}",
    )
    report = json.loads(json.dumps(serial.to_data(diff)))["changed"][0]
    assert (report["corrupt_a"], report["corrupt_b"]) == (None, member.corrupt_b)
    # The other way round, the corrupt side is a.
    assert compare(bad, good).changed[0].corrupt_a == member.corrupt_b
