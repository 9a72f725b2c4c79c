"""`tfbuild doctor` against the real engine: every check, and the canary through the whole pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker


def test_doctor_builds_smokes_checks_and_times_the_canary(base_image: str, tmp_path: Path) -> None:
    dist = tmp_path / "doctor"
    result = subprocess.run(
        [sys.executable, "-m", "tfbuild", "doctor", "--json", "--dist", str(dist)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    report = json.loads(result.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["engine"] == "ok"
    assert statuses["base image"] == "ok"  # the local tfbuild base image: no registry needed
    for name in ("canary build", "canary smoke", "instruction set"):
        assert statuses[name] == "ok", report
    assert result.returncode == (0 if report["ok"] else 5), result.stderr

    canary = report["canary"]
    assert canary["standin"] is True
    assert canary["base_image"] == base_image
    assert canary["builds"]["baseline"]["target"] == "x86_64"
    assert canary["builds"]["host"]["cflags"] != canary["builds"]["baseline"]["cflags"]
    found = canary["isa"]["found"]
    for marker in canary["isa"]["expected"]:
        assert found["host"][marker] > 0
    assert found["baseline"] == {"zmm": 0, "ymm": 0, "fma": 0}
    # A measurement, reported, not asserted on: the figure is in benchmarks and the receipt.
    assert canary["rounds"] == 15
    assert canary["speedup"] == pytest.approx(
        canary["median_ms"]["baseline"] / canary["median_ms"]["host"], rel=0.01
    )

    receipt: dict[str, Any] = json.loads(Path(canary["builds"]["host"]["receipt"]).read_text())
    assert receipt["canary"]["speedup"] == canary["speedup"]
    assert receipt["canary"]["isa"]["ok"] is True


def test_doctor_without_an_engine_fails_in_one_line(tmp_path: Path) -> None:
    socket = f"unix://{tmp_path}/no-engine.sock"
    result = subprocess.run(
        [sys.executable, "-m", "tfbuild", "doctor"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"DOCKER_HOST": socket, "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 5
    assert f"cannot reach the Docker engine at {socket}" in result.stdout
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("tfbuild: error: 1 check(s) failed: engine")
