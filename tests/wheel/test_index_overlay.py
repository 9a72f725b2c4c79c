"""``tfbuild index`` of a directory holding a real overlay (tests/overlays.py) beside a wheel: it is
listed like a wheel, marked OVERLAY with the TensorFlow it goes on, and described by its receipt
only, which is read strictly: a spoiled or missing one stops everything, in one line."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import wheels
from tests.conftest import one_error_line, run_cli
from tests.overlays import BuiltOverlay, place_overlay, write_overlay_receipt
from tests.receipts import write_receipt
from tests.wheel.test_index import TF_V4, Page
from tfbuild.core.errors import InputError
from tfbuild.wheel.receipt import receipt_path


@pytest.fixture
def dist(built_overlay: BuiltOverlay, tmp_path: Path) -> Path:
    directory = tmp_path / "dist"
    place_overlay(built_overlay, directory)
    write_receipt(wheels.make_wheel(directory, TF_V4))
    return directory


def test_an_overlay_is_listed_with_the_tensorflow_it_goes_on(
    dist: Path, built_overlay: BuiltOverlay
) -> None:
    receipt = built_overlay.result.receipt
    name = built_overlay.result.wheel.name
    sha256 = hashlib.sha256((dist / name).read_bytes()).hexdigest()
    result = run_cli("index", str(dist), "--json")
    assert result.returncode == 0, result.stderr
    entries = {w["name"]: w for w in result.json()["wheels"]}
    entry = entries[name]
    assert entry["overlay"] == {
        "distribution": "tensorflow-cpu",  # the receipt's tensorflow_cpu, normalised
        "release": "2.21.0",
        "framework_size": receipt.framework_size,
        "features": list(receipt.features),
        "kernels": len(receipt.kernels),
        "pending": [],  # checked when it was built
    }
    assert (entry["distribution"], entry["tensorflow"], entry["python"]) == (
        "tfbuild-overlay",
        "2.21.0",
        ["py3"],
    )
    assert (entry["target"], entry["described_by"], entry["sha256"]) == (
        receipt.target,
        "receipt",
        sha256,
    )
    assert entry["receipt"] == receipt_path(dist / name).name
    assert entries[TF_V4]["overlay"] is None
    # The page: marked, "runs on" the TensorFlow it goes on, and a note on what an overlay is.
    text = (dist / "index.html").read_text(encoding="utf-8")
    rows = {row[0]: row for row in Page(text).rows[1:]}
    row = rows[f"{name} OVERLAY"]
    assert row[3] == receipt.target
    assert row[6] == "tensorflow-cpu 2.21.0 (that build)"
    assert "OVERLAY: 1 of these 2 wheels are overlays, not TensorFlow" in text
    assert (f"{name}#sha256={sha256}", name) in Page(text).anchors
    # The text output marks it; SHA256SUMS is sha256sum's format, unmarked.
    plain = run_cli("index", str(dist))
    assert f"{sha256}  {name}  OVERLAY on tensorflow-cpu==2.21.0" in plain.stdout.splitlines()
    assert f"{sha256}  {name}\n" in (dist / "SHA256SUMS").read_text()


def _planted_cflag(data: dict[str, Any]) -> None:
    data["cflags"] = [*data["cflags"], "-march=native; rm -rf /"]


def _unknown_key(data: dict[str, Any]) -> None:
    data["extra"] = 1


def _other_sha256(data: dict[str, Any]) -> None:
    data["wheel"]["sha256"] = "0" * 64


def _a_build_receipt(data: dict[str, Any]) -> None:
    data["schema"] = "tfbuild.receipt/2"


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (_planted_cflag, "is not a usable overlay receipt: its cflags is not what tfbuild writes"),
        (_unknown_key, "is not a tfbuild overlay receipt: Object contains unknown field `extra`"),
        (_other_sha256, "does not match its receipt: sha256"),
        (_a_build_receipt, "is not a tfbuild overlay receipt"),
    ],
)
def test_a_spoiled_overlay_receipt_stops_everything_in_one_line(
    dist: Path, built_overlay: BuiltOverlay, spoil: Callable[[dict[str, Any]], None], said: str
) -> None:
    beside = receipt_path(dist / built_overlay.result.wheel.name)
    data = json.loads(beside.read_text())
    spoil(data)
    write_overlay_receipt(dist / built_overlay.result.wheel.name, data)
    line = one_error_line(run_cli("index", str(dist)), InputError.exit_code, said)
    assert beside.name in line
    assert not (dist / "index.html").exists() and not (dist / "SHA256SUMS").exists()


def test_a_key_twice_or_a_missing_receipt_is_refused(
    dist: Path, built_overlay: BuiltOverlay
) -> None:
    wheel = dist / built_overlay.result.wheel.name
    beside = receipt_path(wheel)
    # Two values for one key: which one a reader takes is not for the file to decide.
    text = beside.read_text()
    beside.write_text(text.replace('"target": ', '"target": "zen4", "target": ', 1))
    one_error_line(
        run_cli("index", str(dist)),
        InputError.exit_code,
        "it holds the key 'target' twice in one object",
    )
    # An overlay without its receipt says nothing of the TensorFlow it goes on: not published.
    beside.unlink()
    one_error_line(
        run_cli("index", str(dist)),
        InputError.exit_code,
        f"{wheel.name} has no receipt: {beside} does not exist",
    )
    assert not (dist / "index.html").exists()
