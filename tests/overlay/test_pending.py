"""An overlay built on a machine that cannot run its kernels: its check waits, its kernels never
register unchecked, and ``tfbuild overlay --check`` where it is installed lets them load.

The build machine is a recorded real CPU (tests/fixtures/cpuinfo) that lacks instruction sets of the
target tfbuild plans for this host, which has them: the one thing this machine cannot be is two
CPUs. Everything else is real: the compile, pip's install (with its RECORD), TensorFlow's import,
the check, and the loader reading what the check wrote.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixtures, one_error_line, run_cli
from tests.overlays import venv_seeing_stock, write_overlay_receipt
from tfbuild.core.errors import InputError, UnsupportedError, UsageError
from tfbuild.detect.cpu import instruction_sets
from tfbuild.detect.cpuinfo import CpuInfo, read_cpuinfo
from tfbuild.overlay.build import OverlayResult, build_overlay, verify_overlay
from tfbuild.overlay.pending import CHECK_FILE, COMMAND, check_installed
from tfbuild.wheel.overlay_receipt import (
    OverlayManifest,
    decode_overlay_manifest,
    decode_overlay_receipt,
)
from tfbuild.wheel.receipt import WheelRecord, receipt_path

from .conftest import BuiltOverlay, request_for
from .test_build import REGISTERED, overlay_lines


@dataclass(frozen=True)
class Pending:
    python: str
    site: Path  # pip install --target'ed: the overlay with its dist-info and RECORD
    env: dict[str, str]  # PYTHONPATH: the site, as a user's environment would have it
    result: OverlayResult
    builder: CpuInfo  # the recorded CPU it was built on
    lacked: set[str]


def _builder_lacking(features: tuple[str, ...]) -> tuple[CpuInfo, set[str]]:
    """A recorded x86-64 machine without some of ``features`` (read, never assumed)."""
    for path in cpuinfo_fixtures():
        info = read_cpuinfo(path)
        lacked = set(features) - instruction_sets(info)
        if info.architecture == "x86_64" and lacked:
            return info, lacked
    pytest.skip("every recorded machine runs this host's target")


@pytest.fixture(scope="module")
def pending(
    built_overlay: BuiltOverlay, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pending]:
    """The host's target built as if on an older recorded CPU, then pip installed (--target)."""
    builder, lacked = _builder_lacking(built_overlay.result.receipt.features)
    out = tmp_path_factory.mktemp("pending")
    request = dataclasses.replace(
        request_for(None, out / "dist", built_overlay.python), check=True, build_cpu=builder
    )
    said: list[str] = []
    result = build_overlay(request, progress=said.append)
    assert said[0].startswith("this CPU lacks ") and f" of {request.target}: " in said[0]
    assert any(line.startswith("special-value check: pending, this CPU lacks") for line in said)
    site = out / "site-packages"
    subprocess.run(
        [built_overlay.python, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
         str(site), str(result.wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(site), "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("TFBUILD_OVERLAY", None)
    yield Pending(built_overlay.python, site, env, result, builder, lacked)


def _import(p: Pending, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [p.python, "-c", REGISTERED],
        capture_output=True, text=True, timeout=300, env={**p.env, **extra}, check=True,
    )  # fmt: skip


def _record_row(site: Path, name: str) -> list[str]:
    (record,) = site.glob("tfbuild_overlay-*.dist-info/RECORD")
    rows = [row for row in csv.reader(record.read_text().splitlines()) if row[0] == name]
    assert len(rows) == 1
    return rows[0]


def test_its_receipt_and_manifest_say_the_check_waits_and_for_what(pending: Pending) -> None:
    receipt = pending.result.receipt
    assert set(receipt.pending) == pending.lacked
    assert receipt.checks == ()
    again = decode_overlay_receipt(receipt_path(pending.result.wheel).read_bytes(), source="r")
    assert again == receipt
    with zipfile.ZipFile(pending.result.wheel) as archive:
        names = archive.namelist()
        manifest = decode_overlay_manifest(
            archive.read("tensorflow-plugins/tfbuild_overlay/overlay.json"), source="m"
        )
        shipped = archive.read(f"tensorflow-plugins/tfbuild_overlay/{CHECK_FILE}").decode()
        kernels = archive.read("tensorflow-plugins/tfbuild_overlay/kernels.so")
    assert f"tensorflow-plugins/tfbuild_overlay/{CHECK_FILE}" in names
    assert manifest.pending == receipt.pending
    assert manifest.token == hashlib.sha256(kernels).hexdigest()
    assert shipped.startswith(f"pending: built on a CPU without {' '.join(receipt.pending)};")


def test_installed_it_registers_nothing_and_says_what_to_run(pending: Pending) -> None:
    for mode in ({}, {"TFBUILD_OVERLAY": "status"}, {"TFBUILD_OVERLAY": "on"}):
        ran = _import(pending, **mode)
        assert ran.stdout.split()[0] == "0", mode  # stock's Exp only
        assert float(ran.stdout.split()[1]) == pytest.approx(2.718281828, rel=1e-6)
        (line,) = overlay_lines(ran.stderr)
        lacked = " ".join(pending.result.receipt.pending)
        assert line.endswith(
            "not loaded, stock kernels run: its special-value check has not run on a CPU with "
            f"its instruction sets (it was built on one without {lacked}); run: {COMMAND} (the "
            "Python you run)"
        )


def test_its_check_here_records_it_and_the_kernels_register(
    pending: Pending, tmp_path: Path
) -> None:
    """Checked on this CPU (which has the target's sets): CHECK says passed with the kernels'
    sha256, pip's RECORD has the file's new hash, and the loader registers the kernels. A CHECK
    naming other kernels, or a builder's CPU, is not taken."""
    check = pending.site / "tensorflow-plugins" / "tfbuild_overlay" / CHECK_FILE
    shipped = check.read_bytes()
    with pytest.raises(UnsupportedError, match="which this CPU lacks"):
        check_installed(pending.python, env=pending.env, cpu=pending.builder)
    assert check.read_bytes() == shipped  # nothing written

    said: list[str] = []
    done = check_installed(pending.python, env=pending.env, progress=said.append)
    assert done.site == pending.site and done.record == check
    assert {c.kernel for c in done.checks} == set(pending.result.receipt.kernels)
    token = done.manifest.token
    assert check.read_text().splitlines()[0] == f"passed {token}"
    data = check.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    name = f"tensorflow-plugins/tfbuild_overlay/{CHECK_FILE}"
    assert _record_row(pending.site, name) == [name, f"sha256={digest}", str(len(data))]
    ran = _import(pending, TFBUILD_OVERLAY="status")
    assert ran.stdout.split()[0] == "1"  # the overlay's Exp sits above stock's
    (line,) = overlay_lines(ran.stderr)
    assert f"loaded, {len(pending.result.receipt.kernels)} kernels above" in line

    check.write_text(f"passed {'0' * 64}\n")  # another build's record
    assert _import(pending).stdout.split()[0] == "0"
    check.write_bytes(data)


def test_verify_rebuilds_a_pending_overlay_byte_for_byte_anywhere(pending: Pending) -> None:
    """The receipt's pending sets go into the rebuild, so this CPU, which has them, makes the same
    loader the build machine made."""
    again = verify_overlay(pending.result.wheel)
    assert again.receipt.wheel.sha256 == pending.result.receipt.wheel.sha256
    assert again.receipt.pending == pending.result.receipt.pending


def test_the_command_checks_the_python_it_is_given(built_overlay: BuiltOverlay) -> None:
    """--check with build options is one line; for an interpreter without an overlay, it names
    --python (tfbuild's own interpreter has none)."""
    ran = run_cli("overlay", "--check", "--target", "haswell", "--tf", "2.21")
    assert one_error_line(ran, UsageError.exit_code) == (
        "tfbuild: error: --check builds nothing, so --tf --target has no use with it. Drop them: "
        "--check runs the check of the overlay installed for --python."
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = run_cli("overlay", "--check", "--python", built_overlay.python, env=env)
    line = one_error_line(ran, UsageError.exit_code)
    assert line.startswith(
        f"tfbuild: error: no tfbuild overlay is installed for {built_overlay.python}"
    )
    assert "with --python" in line


def test_the_cli_names_the_command_the_loader_and_the_check_name(pending: Pending) -> None:
    """The loader's own words are asserted above (with :data:`COMMAND` in them)."""
    from tfbuild.cli.overlay import built_lines

    lines = built_lines(pending.result.wheel, pending.result.receipt)
    assert f"registers nothing until '{COMMAND}' passes" in " ".join(map(str.strip, lines))


def _manifest(**changes: object) -> bytes:
    base = OverlayManifest(
        tensorflow="2.21.0",
        distribution="tensorflow-cpu",
        git_version="v2.21.0",
        framework_size=1,
        target="icelake",
        cflags=("-march=icelake-server",),
        features=("avx2", "avx512f"),
        compiler="clang 18",
        kernels=("Exp:float32",),
        pending=("avx512f",),
        token="a" * 64,
    )
    from tfbuild.core import serial

    return json.dumps({**serial.to_data(base), **changes}).encode()


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"pending": ["amx_tile"]}, "its pending is not what tfbuild writes there"),
        ({"token": "passed"}, "its token is not what tfbuild writes there"),
        ({"features": ["avx2; rm -rf /"]}, "its features is not what tfbuild writes there"),
        ({"kernels": "Exp:float32"}, "Expected `array`"),
        ({"extra": 1}, "unknown field"),
    ],
)
def test_a_manifest_is_decoded_strictly(changes: dict[str, object], why: str) -> None:
    assert decode_overlay_manifest(_manifest(), source="m").pending == ("avx512f",)
    with pytest.raises(InputError) as refused:
        decode_overlay_manifest(_manifest(**changes), source="m")
    assert refused.value.what == "m is not a tfbuild overlay's manifest"
    assert why.lower() in refused.value.why.lower()


# --- pick --install: the check before the kernels load, and nothing left behind when it fails ------


def _copy(pending: Pending, dist: Path, *, spoil: bool = False) -> Path:
    """The pending overlay and its receipt in ``dist``; ``spoil``: its kernels changed by a byte
    (a wheel the receipt describes, whose kernels are not the ones its manifest names)."""
    dist.mkdir(parents=True, exist_ok=True)
    wheel = dist / pending.result.wheel.name
    receipt = pending.result.receipt
    if not spoil:
        shutil.copyfile(pending.result.wheel, wheel)
    else:
        kernels = "tensorflow-plugins/tfbuild_overlay/kernels.so"
        with zipfile.ZipFile(pending.result.wheel) as src, zipfile.ZipFile(wheel, "w") as out:
            for info in src.infolist():
                data = src.read(info)
                out.writestr(info, data + b"\0" if info.filename == kernels else data)
    data = wheel.read_bytes()
    record = WheelRecord(name=wheel.name, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    write_overlay_receipt(wheel, dataclasses.replace(receipt, wheel=record))
    return wheel


def test_pick_install_runs_the_pending_check_then_the_kernels_load(
    pending: Pending, built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    wheel = _copy(pending, dist)
    python, site = venv_seeing_stock(built_overlay.python, tmp_path)
    args = ("--overlay", "--install", "--python", str(python), "--pip-arg=--no-index")
    ran = run_cli("pick", str(dist), *args, env={**os.environ, "PYTHONPATH": ""}, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert f"[pick] {wheel.name} was built on a machine without " in ran.stderr
    check = site / "tensorflow-plugins" / "tfbuild_overlay" / CHECK_FILE
    assert f"its special-value check passed here ({len(pending.result.receipt.kernels)} " in (
        ran.stdout
    )
    assert check.read_text().startswith("passed ")
    done = subprocess.run(
        [str(python), "-c", REGISTERED],
        capture_output=True, text=True, timeout=300, check=True,
        env={**pending.env, "PYTHONPATH": "", "TFBUILD_OVERLAY": "status"},
    )  # fmt: skip
    assert done.stdout.split()[0] == "1"
    assert "loaded, " in overlay_lines(done.stderr)[0]


def test_pick_install_uninstalls_an_overlay_whose_check_fails(
    pending: Pending, built_overlay: BuiltOverlay, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    _copy(pending, dist, spoil=True)
    python, site = venv_seeing_stock(built_overlay.python, tmp_path)
    args = ("--overlay", "--install", "--python", str(python), "--pip-arg=--no-index")
    ran = run_cli("pick", str(dist), *args, env={**os.environ, "PYTHONPATH": ""}, timeout=600)
    line = one_error_line(ran, InputError.exit_code, among_others=True)
    assert "are not the ones its manifest names" in line
    assert "so it was uninstalled again" in line
    assert not (site / "tensorflow-plugins").exists() or not any(
        (site / "tensorflow-plugins").iterdir()
    )


def test_the_index_marks_its_check_pending(pending: Pending, tmp_path: Path) -> None:
    from tfbuild.wheel.index import write_index

    dist = tmp_path / "dist"
    wheel = _copy(pending, dist)
    write_index(dist)
    page = (dist / "index.html").read_text()
    row = next(line for line in page.splitlines() if wheel.name in line)
    assert '<strong class="overlay">OVERLAY</strong> <em class="pending">check pending</em>' in row
    ran = run_cli("index", str(dist), "--json")
    assert ran.returncode == 0, ran.stderr
    (entry,) = ran.json()["wheels"]
    assert entry["overlay"]["pending"] == list(pending.result.receipt.pending)
