"""`tfbuild smoke` of the canary's STAND-IN wheel, built by the real pipeline: tested as what it is
(installed into a fresh environment, imported as tfbuild_canary, its kernel and C++ part run, its
flags checked against its receipt and in its machine code), never as a TensorFlow."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import as_a_process
from tests.conftest import CliResult, one_error_line, run_cli
from tests.docker.test_wheel import wheel_cli
from tfbuild.detect import cpu
from tfbuild.smoke.standin import expected_kinds

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def canary_wheel(engine: Any, base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One canary wheel for this machine, with its receipt, built through `tfbuild wheel`."""
    import uuid

    volume = f"tfbuild-test-smoke_standin-{uuid.uuid4().hex[:10]}"
    try:
        result = wheel_cli(tmp_path_factory.mktemp("dist"), volume, "--json")
    finally:
        engine.remove_volume(volume)
    assert result.returncode == 0, result.stderr
    return Path(json.loads(result.stdout)["wheel"])


def copy_of(wheel: Path, into: Path, *, receipt: bool = True) -> Path:
    into.mkdir()
    shutil.copyfile(wheel, into / wheel.name)
    if receipt:
        shutil.copyfile(wheel.with_suffix(".json"), into / wheel.with_suffix(".json").name)
    return into / wheel.name


def smoke(*args: str) -> CliResult:
    """`tfbuild smoke ARGS`, run in this process with this environment (no $COLUMNS)."""
    return as_a_process(["smoke", *args], dict(os.environ), timeout=300)


def test_the_stand_in_is_tested_as_what_it_is_and_passes(canary_wheel: Path) -> None:
    result = smoke(str(canary_wheel), "--no-bench")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == canary_wheel.name
    assert lines[1].startswith("STAND-IN: tfbuild's canary, not TensorFlow")
    text = " ".join(result.stdout.split())
    assert "imports tfbuild_canary, its kernel ran" in text
    receipt = json.loads(canary_wheel.with_suffix(".json").read_text())
    flags = " ".join(receipt["cflags"])
    assert f"flags: {flags} (recorded in the wheel, as its receipt says;" in text
    assert "machine code: " in text and "no benchmark" not in text  # --no-bench
    assert lines[-1].startswith("PASSED in ")
    assert "No module named" not in result.stdout + result.stderr
    said = result.stderr.splitlines()
    assert said[0] == (
        f"[smoke] {canary_wheel.name} is the STAND-IN canary (not TensorFlow): testing it as that"
    )
    assert all(line.startswith("[smoke] ") for line in said)


def test_its_json_has_what_proves_the_flags(canary_wheel: Path) -> None:
    result = smoke(str(canary_wheel), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    receipt = json.loads(canary_wheel.with_suffix(".json").read_text())
    assert report["schema"] == "tfbuild.smoke-standin/1"
    assert (report["standin"], report["passed"], report["ran"]) == (True, True, True)
    assert report["module"] == "tfbuild_canary" and report["runtime"] == 1000
    assert report["checksum"] > 0
    assert report["flags"] == report["receipt_flags"] == receipt["cflags"]
    assert report["target"] == receipt["target"]
    counted = report["instructions"]["counted"]
    covered = tuple(c["feature"] for c in receipt["plan"]["coverage"] if c["flag"])
    expected = list(expected_kinds(covered))
    assert report["instructions"]["expected"] == expected
    have = set(cpu.guard_features(cpu.host_cpuinfo()))  # built for this machine: its widest
    assert ("zmm" in expected) == ("AVX512F" in have) and ("fma" in expected) == ("FMA" in have)
    for kind in expected:
        assert counted[kind] > 0, counted
    assert result.stderr == ""


def test_flags_other_than_its_receipts_fail_naming_both(canary_wheel: Path, tmp_path: Path) -> None:
    wheel = copy_of(canary_wheel, tmp_path / "edited")
    receipt_file = wheel.with_suffix(".json")
    receipt = json.loads(receipt_file.read_text())
    built_with = " ".join(receipt["cflags"])
    receipt["cflags"] = ["-march=x86-64"]
    receipt_file.write_text(json.dumps(receipt))
    result = smoke(str(wheel), "--no-bench")
    assert result.returncode == 7, result.stderr
    line = one_error_line(result, among_others=True)
    assert "(the STAND-IN canary) did not pass" in line
    assert f"it was built with {built_with}, and its receipt says -march=x86-64" in line
    assert "FAILED" in result.stdout


def test_without_a_receipt_it_still_runs_and_says_what_was_not_checked(
    canary_wheel: Path, tmp_path: Path
) -> None:
    wheel = copy_of(canary_wheel, tmp_path / "alone", receipt=False)
    result = smoke(str(wheel), "--no-bench")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "(recorded in the wheel; no receipt beside it to compare with)" in text
    assert "not checked against its flags: no receipt beside the wheel" in text


def test_index_and_pick_say_stand_in_by_its_name(canary_wheel: Path, tmp_path: Path) -> None:
    wheel = copy_of(canary_wheel, tmp_path / "dist", receipt=False)
    indexed = run_cli("index", str(wheel.parent), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert [e["standin"] for e in indexed.json()["wheels"]] == [True]
    picked = run_cli("pick", str(wheel.parent), "--json")
    assert picked.returncode == 0, picked.stderr
    assert picked.json()["chosen"]["standin"] is True
