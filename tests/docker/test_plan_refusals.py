"""`tfbuild wheel` on the real engine: an impossible plan is refused before any work, and the plan's
warnings reach the wheel's output (the canary STAND-IN source, not TensorFlow)."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from tests.docker.test_wheel import wheel_cli

pytestmark = pytest.mark.docker

FOREIGN_TARGET = "neoverse_v2" if platform.machine() == "x86_64" else "x86_64_v3"


def test_wheel_refuses_another_architecture_before_any_work(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    result = wheel_cli(dist, volume, "--target", FOREIGN_TARGET)
    assert result.returncode == 4, result.stderr
    assert result.stderr.count("\n") == 1
    assert f"--target {FOREIGN_TARGET} is an" in result.stderr
    assert "until cross-compilation is real" in result.stderr
    assert not dist.exists()  # refused when planned: no log, no work directory, no wheel


def test_the_plans_warnings_reach_the_wheels_output(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    # Bookworm's gcc 12.2 does not know zen5 (archspec: 14.1); zen4's flags plus -mavxvnni cover
    # it: a plan warning. The canary only compiles for the target, it never runs the code here.
    result = wheel_cli(tmp_path / "dist", volume, "--target", "zen5", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (warning,) = [w for w in data["warnings"] if "does not know zen5" in w]
    assert "using zen4's flags" in warning
    assert f"[tfbuild] warning: {warning}" in Path(data["log"]).read_text()
