"""Stamping a wheel with its label: a real zip rewritten, checked by zipfile, RECORD and pip itself."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.wheels import record_hash
from tfbuild.errors import InputError
from tfbuild.wheelfile import has_label, relabel

STOCK_WHEEL = "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl"


class _Unseekable(io.RawIOBase):
    """A write-only stream: zipfile then writes data descriptors after each member."""

    def __init__(self, sink: io.BytesIO) -> None:
        self.sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return self.sink.write(data)


def make_wheel(directory: Path, *, version: str = "2.21.0", descriptors: bool = False) -> Path:
    """A small, valid wheel with a package, a .data script, stored and deflated members."""
    dist = f"tfbuild_standin-{version}"
    files = {
        "tfbuild_standin/__init__.py": b"VALUE = 42\n",
        "tfbuild_standin/kernel.bin": bytes(range(256)) * 64,
        f"{dist}.data/scripts/standin-hello": b"#!python\nprint('hello')\n",
        f"{dist}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: tfbuild_standin\nVersion: {version}\n"
            "Summary: STAND-IN wheel for tfbuild's tests\n\nVersion: is also said in the body.\n"
        ).encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\n"
        b"Tag: cp311-cp311-linux_x86_64\n",
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    record += f"{dist}.dist-info/RECORD,,\n"
    files[f"{dist}.dist-info/RECORD"] = record.encode()
    path = directory / f"tfbuild_standin-{version}-cp311-cp311-linux_x86_64.whl"
    buffer = io.BytesIO()
    target: io.BytesIO | _Unseekable = _Unseekable(buffer) if descriptors else buffer
    with zipfile.ZipFile(target, "w") as archive:  # type: ignore[arg-type]
        for name, data in files.items():
            method = zipfile.ZIP_STORED if name.endswith(".bin") else zipfile.ZIP_DEFLATED
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 2, 3, 4, 6))
            info.compress_type = method
            info.external_attr = 0o100755 << 16 if "scripts" in name else 0o100644 << 16
            with archive.open(info, "w") as member:
                member.write(data)
    path.write_bytes(buffer.getvalue())
    return path


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
    assert hashes["tfbuild_standin/kernel.bin"] == record_hash(bytes(range(256)) * 64)


def test_pip_installs_the_labelled_wheel(tmp_path: Path) -> None:
    labelled = relabel(make_wheel(tmp_path), "zen4", tmp_path)
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
