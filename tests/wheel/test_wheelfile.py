"""Stamping a wheel with its label: a real zip rewritten, checked by zipfile, RECORD and pip itself."""

from __future__ import annotations

import csv
import io
import random
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import wheels
from tests.wheels import record_hash
from tfbuild.core.errors import InputError
from tfbuild.wheel.wheelfile import has_label, normalise, relabel, zip_time

STOCK_WHEEL = "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl"
EPOCH = 1_767_323_045  # SOURCE_DATE_EPOCH for the normalised wheels: 2026-01-02 03:04:05 UTC
KERNEL = bytes(range(256)) * 64  # stored, not deflated


def make_wheel(directory: Path, *, version: str = "2.21.0", descriptors: bool = False) -> Path:
    """A small, valid wheel with a package, a .data script, stored and deflated members."""
    script = f"tfbuild_standin-{version}.data/scripts/standin-hello"
    return wheels.make_wheel(
        directory,
        f"tfbuild_standin-{version}-cp311-cp311-linux_x86_64.whl",
        module_text="VALUE = 42\n",
        members={"tfbuild_standin/kernel.bin": KERNEL, script: b"#!python\nprint('hello')\n"},
        description="Version: is also said in the body.\n",
        modes={script: 0o755},
        stored=("tfbuild_standin/kernel.bin",),
        descriptors=descriptors,
    )


def verify_record(wheel: Path) -> dict[str, str]:
    """Every member is listed in RECORD with its true hash and size; returns name -> hash."""
    with zipfile.ZipFile(wheel) as archive:
        assert archive.testzip() is None
        names = [n for n in archive.namelist() if not n.endswith("/")]  # directories: not listed
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(archive.read(record_name).decode())))
        listed = {row[0]: row for row in rows if row}
        assert set(listed) == set(names)
        for name in names:
            if name == record_name:
                continue
            data = archive.read(name)
            assert listed[name][1:] == [record_hash(data), str(len(data))], name
        return {name: listed[name][1] for name in names}


@pytest.mark.parametrize("descriptors", [False, True], ids=["sizes-in-header", "data-descriptors"])
def test_relabel_renames_everything_and_keeps_every_byte(tmp_path: Path, descriptors: bool) -> None:
    original = make_wheel(tmp_path, descriptors=descriptors)
    out = tmp_path / "out"
    out.mkdir()
    labelled = relabel(original, "x86_64v4.cu125", out)
    assert labelled.name == "tfbuild_standin-2.21.0+x86_64v4.cu125-cp311-cp311-linux_x86_64.whl"
    assert sorted(p.name for p in out.iterdir()) == [labelled.name]  # no temp file left
    hashes = verify_record(labelled)
    with zipfile.ZipFile(original) as before, zipfile.ZipFile(labelled) as after:
        new_names = after.namelist()
        assert "tfbuild_standin-2.21.0+x86_64v4.cu125.dist-info/METADATA" in new_names
        assert "tfbuild_standin-2.21.0+x86_64v4.cu125.data/scripts/standin-hello" in new_names
        assert not any(n.startswith("tfbuild_standin-2.21.0.") for n in new_names)
        assert new_names[-1].endswith("RECORD")
        metadata = after.read("tfbuild_standin-2.21.0+x86_64v4.cu125.dist-info/METADATA").decode()
        assert "\nVersion: 2.21.0+x86_64v4.cu125\n" in metadata
        assert metadata.endswith("Version: is also said in the body.\n")  # only the header field
        # Members other than METADATA and RECORD: same content, same compression, same mode.
        for info in before.infolist():
            if info.filename.endswith(("METADATA", "RECORD")):
                continue
            twin = after.getinfo(info.filename.replace("2.21.0", "2.21.0+x86_64v4.cu125", 1))
            assert (twin.CRC, twin.compress_type, twin.external_attr) == (
                info.CRC,
                info.compress_type,
                info.external_attr,
            )
            assert after.read(twin) == before.read(info)
    assert hashes["tfbuild_standin/kernel.bin"] == record_hash(KERNEL)


@pytest.mark.parametrize("epoch", [None, EPOCH], ids=["labelled", "labelled-and-normalised"])
def test_pip_installs_the_labelled_wheel(tmp_path: Path, epoch: int | None) -> None:
    labelled = relabel(make_wheel(tmp_path), "zen4", tmp_path, epoch=epoch)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The host's pip installs into the venv's site-packages: offline, and the wheel is validated.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            site,
            str(labelled),
        ],
        check=True,
    )
    result = subprocess.run(
        [
            python,
            "-c",
            "import importlib.metadata as m, tfbuild_standin as s; "
            "print(m.version('tfbuild_standin'), s.VALUE)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["2.21.0+zen4", "42"]


def test_a_snapshot_version_keeps_its_label_and_gains_ours(tmp_path: Path) -> None:
    labelled = relabel(make_wheel(tmp_path, version="2.20.0.dev0+selfbuilt"), "x86_64v3", tmp_path)
    assert labelled.name.startswith("tfbuild_standin-2.20.0.dev0+selfbuilt.x86_64v3-cp311")
    verify_record(labelled)


def test_relabelling_twice_is_a_copy(tmp_path: Path) -> None:
    first = relabel(make_wheel(tmp_path), "x86_64v3", tmp_path)
    out = tmp_path / "again"
    out.mkdir()
    second = relabel(first, "x86_64v3", out)
    assert second.name == first.name
    assert second.read_bytes() == first.read_bytes()
    assert has_label("2.21.0+x86.64v3", "x86_64v3")  # PEP 440 spellings are the same label
    assert not has_label("2.21.0+x86_64v3", "x86_64v4")
    assert not has_label("2.21.0", "x86_64v3")


def test_a_damaged_wheel_is_one_clear_error_and_leaves_nothing(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path)
    wheel.write_bytes(wheel.read_bytes()[:-200])  # the central directory is cut off
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="cannot read"):
        relabel(wheel, "x86_64v3", out)
    assert list(out.iterdir()) == []
    with pytest.raises(InputError, match="not a wheel file name"):
        relabel(tmp_path / "tensorflow.zip", "x86_64v3", out)


def test_a_wheel_with_two_dist_info_directories_of_its_version_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("other-2.21.0.dist-info/RECORD", "")
    with pytest.raises(
        InputError, match=r"no single \.dist-info directory for version 2\.21\.0"
    ) as e:
        relabel(wheel, "x86_64v3", tmp_path)
    assert e.value.why == "found other-2.21.0.dist-info, tfbuild_standin-2.21.0.dist-info"


@pytest.mark.parametrize("where", ["middle", "start", "header"])
def test_a_member_with_a_flipped_byte_is_one_line_naming_it(tmp_path: Path, where: str) -> None:
    """Issue 21, item 3: the member METADATA, which relabel reads, has one byte flipped in its
    compressed data (or local header): one InputError naming it, never BadZipFile or zlib.error."""
    wheel = make_wheel(tmp_path)
    metadata = "tfbuild_standin-2.21.0.dist-info/METADATA"
    wheels.flip_compressed_byte(wheel, metadata, where=where)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match=f"^the wheel's member {re.escape(metadata)} is corrupt: "):
        relabel(wheel, "x86_64v3", out)
    assert list(out.iterdir()) == []


@pytest.fixture(scope="session")
def stock_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real stock wheel from the package index (cached across runs)."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the stock tensorflow-cpu 2.21.0 wheel of these tests is for Python 3.11")
    cache = Path.home() / ".cache" / "tfbuild-tests" / "wheels"
    wheel = cache / STOCK_WHEEL
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "-d",
                str(cache),
                "--only-binary=:all:",
                "tensorflow-cpu==2.21.0",
            ],
            check=True,
        )
    return wheel


@pytest.mark.slow
def test_the_real_tensorflow_wheel(stock_wheel: Path, tmp_path: Path) -> None:
    """15,000 members, a 270 MB archive: renamed, every member's bytes and RECORD entry intact."""
    labelled = relabel(stock_wheel, "x86_64v4", tmp_path)
    assert labelled.name == "tensorflow_cpu-2.21.0+x86_64v4-cp311-cp311-manylinux_2_27_x86_64.whl"
    hashes = verify_record(labelled)
    with zipfile.ZipFile(stock_wheel) as before:
        stock = {i.filename: i.CRC for i in before.infolist()}
    with zipfile.ZipFile(labelled) as after:
        ours = {
            i.filename.replace("2.21.0+x86_64v4.", "2.21.0.", 1): i.CRC for i in after.infolist()
        }
    changed = {name for name in stock if stock[name] != ours[name]}
    assert changed == {
        "tensorflow_cpu-2.21.0.dist-info/METADATA",
        "tensorflow_cpu-2.21.0.dist-info/RECORD",
    }
    assert len(hashes) == len([name for name in stock if not name.endswith("/")])


# --- normalise: the zip layout no longer depends on the machine or the moment that packed it ---

_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a local file header (APPNOTE 4.3.7)


def raw_members(wheel: Path) -> dict[str, tuple[int, bytes]]:
    """Each file member's compression method and compressed bytes, read past its local header."""
    found = {}
    with zipfile.ZipFile(wheel) as archive, wheel.open("rb") as handle:
        for info in archive.infolist():
            if info.is_dir():
                continue
            handle.seek(info.header_offset)
            header = _LOCAL.unpack(handle.read(_LOCAL.size))
            handle.seek(header[-2] + header[-1], 1)
            found[info.filename] = (info.compress_type, handle.read(info.compress_size))
    return found


def repacked(wheel: Path, dest: Path, seed: int) -> Path:
    """``wheel``'s members, same contents and compression, in another order with other times, modes,
    directory entries, extra fields and "made by" systems: what another packing machine writes."""
    rng = random.Random(seed)
    dest.mkdir()
    with zipfile.ZipFile(wheel) as source:
        infos = source.infolist()
        contents = {i.filename: source.read(i) for i in infos}
    rng.shuffle(infos)
    with zipfile.ZipFile(dest / wheel.name, "w") as target:
        for directory in rng.sample(
            ["tfbuild_standin/", "tfbuild_standin-2.21.0.data/"], k=seed % 3
        ):
            target.writestr(zipfile.ZipInfo(directory, date_time=(2020, 1, 1, 0, 0, 0)), b"")
        for info in infos:
            member = zipfile.ZipInfo(
                info.filename, date_time=(rng.randint(1980, 2030), rng.randint(1, 12), 1, 2, 3, 4)
            )
            member.compress_type = info.compress_type
            executable = (info.external_attr >> 16) & 0o111
            mode = rng.choice([0o755, 0o775, 0o700, 0o711] if executable else [0o644, 0o664, 0o600])
            member.external_attr = (0o100000 | mode) << 16
            member.create_system = rng.choice([0, 3])
            if rng.random() < 0.5:  # an extended-timestamp field, as Info-ZIP writes
                member.extra = struct.pack("<HHBl", 0x5455, 5, 1, rng.randint(0, 2**31 - 1))
            target.writestr(member, contents[info.filename])
    return dest / wheel.name


def test_normalise_makes_differently_packed_wheels_byte_identical(tmp_path: Path) -> None:
    original = make_wheel(tmp_path)
    variants = [repacked(original, tmp_path / f"packed{seed}", seed) for seed in range(4)]
    with zipfile.ZipFile(variants[0]) as a, zipfile.ZipFile(variants[1]) as b:
        assert a.namelist() != b.namelist()  # the inputs really differ
    assert len({v.read_bytes() for v in variants}) == len(variants)
    results = []
    for index, wheel in enumerate([original, *variants]):
        out = tmp_path / f"normalised{index}"
        result = normalise(wheel, out, epoch=EPOCH)
        assert result == out / original.name
        assert [p.name for p in out.iterdir()] == [original.name]  # no temp file left
        results.append(result.read_bytes())
    assert len(set(results)) == 1
    # Normalising a normalised wheel changes nothing.
    again = normalise(tmp_path / "normalised0" / original.name, tmp_path / "again", epoch=EPOCH)
    assert again.read_bytes() == results[0]


def test_normalise_copies_the_compressed_bytes_and_writes_the_layout(tmp_path: Path) -> None:
    original = repacked(make_wheel(tmp_path), tmp_path / "packed", seed=2)
    result = normalise(original, tmp_path / "out", epoch=EPOCH)
    before, after = raw_members(original), raw_members(result)
    record_name = "tfbuild_standin-2.21.0.dist-info/RECORD"
    assert after.keys() == before.keys()
    for name in before.keys() - {record_name}:  # RECORD is written again, in the new order
        assert after[name] == before[name], name  # the compressed bytes: not recompressed
    hashes = verify_record(result)
    with zipfile.ZipFile(result) as archive:
        infos = archive.infolist()
        names = [i.filename for i in infos]
        record = archive.read(names[-1]).decode()
    dist_info = "tfbuild_standin-2.21.0.dist-info/"
    assert names == [
        "tfbuild_standin-2.21.0.data/scripts/standin-hello",
        "tfbuild_standin/__init__.py",
        "tfbuild_standin/kernel.bin",
        f"{dist_info}METADATA",
        f"{dist_info}WHEEL",
        f"{dist_info}RECORD",
    ]
    assert [row.split(",")[0] for row in record.splitlines()] == names  # RECORD: the same order
    assert record.endswith(f"{dist_info}RECORD,,\n")
    assert hashes["tfbuild_standin/kernel.bin"] == record_hash(KERNEL)
    for info in infos:
        assert info.date_time == (2026, 1, 2, 3, 4, 4)  # UTC, in the zip's 2-second steps
        executable = info.filename.endswith("standin-hello")
        assert info.external_attr == (0o100755 if executable else 0o100644) << 16, info.filename
        assert (info.create_system, info.extra, info.comment) == (3, b"", b"")


def test_an_epoch_before_1980_is_the_zip_minimum(tmp_path: Path) -> None:
    assert zip_time(0) == (1980, 1, 1, 0, 0, 0)
    assert zip_time(-5) == (1980, 1, 1, 0, 0, 0)
    assert zip_time(EPOCH) == (2026, 1, 2, 3, 4, 5)
    result = normalise(make_wheel(tmp_path), tmp_path / "out", epoch=0)
    with zipfile.ZipFile(result) as archive:
        assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_relabel_with_an_epoch_is_relabel_then_normalise_in_one_pass(tmp_path: Path) -> None:
    original = repacked(make_wheel(tmp_path), tmp_path / "packed", seed=1)
    both = relabel(original, "x86_64v4", tmp_path / "both", epoch=EPOCH)
    (tmp_path / "step").mkdir()
    labelled = relabel(original, "x86_64v4", tmp_path / "step")
    stepwise = normalise(labelled, tmp_path / "stepwise", epoch=EPOCH)
    assert both.name == stepwise.name == labelled.name
    assert both.read_bytes() == stepwise.read_bytes()
    verify_record(both)
    # Already labelled: no copy as it is, but normalised.
    again = relabel(labelled, "x86_64v4", tmp_path / "again", epoch=EPOCH)
    assert again.read_bytes() == both.read_bytes()
    before, after = raw_members(labelled), raw_members(both)
    assert {name for name in after if after[name] != before.get(name)} == {
        "tfbuild_standin-2.21.0+x86_64v4.dist-info/RECORD"  # reordered; METADATA came as it was
    }


def test_normalise_in_place(tmp_path: Path) -> None:
    wheel = repacked(make_wheel(tmp_path), tmp_path / "packed", seed=3)
    expected = normalise(wheel, tmp_path / "elsewhere", epoch=EPOCH).read_bytes()
    assert normalise(wheel, wheel.parent, epoch=EPOCH) == wheel
    assert wheel.read_bytes() == expected
    assert [p.name for p in wheel.parent.iterdir()] == [wheel.name]


def test_a_record_that_disagrees_with_a_member_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path)
    contents = wheels.members_of(wheel)
    record = "tfbuild_standin-2.21.0.dist-info/RECORD"
    contents[record] = contents[record].replace(b",11\n", b",12\n", 1)  # __init__.py's size
    wheels.pack(wheel, contents)
    with pytest.raises(
        InputError, match=r"RECORD gives tfbuild_standin/__init__\.py 12 bytes, the member has 11"
    ):
        normalise(wheel, tmp_path / "out", epoch=EPOCH)
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.slow
def test_normalising_the_real_tensorflow_wheel(stock_wheel: Path, tmp_path: Path) -> None:
    """15,600 members: sorted, re-timed, every compressed byte and RECORD hash as it was."""
    result = normalise(stock_wheel, tmp_path, epoch=EPOCH)
    with zipfile.ZipFile(stock_wheel) as before:
        stock = {i.filename: i for i in before.infolist() if not i.is_dir()}
        stock_record = before.read("tensorflow_cpu-2.21.0.dist-info/RECORD").decode()
    with zipfile.ZipFile(result) as after:
        infos = after.infolist()
        record = after.read(infos[-1]).decode()
    names = [i.filename for i in infos]
    in_dist_info = [n.startswith("tensorflow_cpu-2.21.0.dist-info/") for n in names]
    assert in_dist_info == sorted(in_dist_info)
    assert names[-1] == "tensorflow_cpu-2.21.0.dist-info/RECORD"
    assert names[:-1] == sorted(
        names[:-1], key=lambda n: (n.startswith("tensorflow_cpu-2.21.0.dist-info/"), n)
    )
    assert set(names) == set(stock)
    for info in infos[:-1]:  # RECORD is written again
        twin = stock[info.filename]
        assert (info.CRC, info.compress_size, info.compress_type) == (
            twin.CRC,
            twin.compress_size,
            twin.compress_type,
        )
    rows = [row for row in csv.reader(io.StringIO(record)) if row]
    stock_rows = {row[0]: row for row in csv.reader(io.StringIO(stock_record)) if row}
    assert [row[0] for row in rows] == names
    assert all(row[1:] == stock_rows[row[0]][1:] for row in rows[:-1])
