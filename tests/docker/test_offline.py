"""`tfbuild wheel` where a download it needs cannot be made: one error line (exit 5), then, on a line
of its own, what can be done here instead (`tfbuild doctor`) and how a real build gets there."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.build.preflight.test_wheel_refuses import toolchain_tag
from tests.conftest import ROOT, CliResult, run_cli
from tfbuild.core.defaults import DOCTOR_TIMES

pytestmark = pytest.mark.docker

TREES = ROOT / "tests" / "fixtures" / "trees"
TARBALL = "https://github.com/tensorflow/tensorflow/archive/refs/tags/v2.21.0.tar.gz"
#: Nothing listens on the discard port of the loopback (the container's own, for the image build).
NOWHERE = "http://127.0.0.1:9"


def assert_error_then_hint(result: CliResult, error: str) -> None:
    assert result.returncode == 5, result.stderr
    lines = result.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("tfbuild: error: ")]
    assert len(errors) == 1, result.stderr  # the error stays one line
    assert lines[errors[0]].startswith(f"tfbuild: error: {error}")
    # The hint is the next line and the last: separate, after the error that scripts read.
    assert errors[0] == len(lines) - 2, result.stderr
    hint = lines[-1]
    assert hint.startswith("tfbuild: hint: ")
    assert "tfbuild doctor proves this machine and the whole pipeline" in hint
    assert "without the network" in hint
    # How long that takes, said once (tfbuild.core.defaults), as measured: not "in seconds".
    assert f"({DOCTOR_TIMES})" in hint
    assert "proxy (HTTPS_PROXY" in hint and "remote cache (--remote-cache URL)" in hint
    assert result.stdout == ""


def test_a_release_tarball_it_cannot_download(tmp_path: Path) -> None:
    """The recipe's tarball from a port nothing listens on: refused before any image."""
    model = (ROOT / "recipes" / "tf-2.21.yaml").read_text()
    assert TARBALL in model
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    dead = "https://127.0.0.1:9/v2.21.0.tar.gz"
    (recipes / "tf-2.21.yaml").write_text(model.replace(TARBALL, dead))
    result = run_cli(
        "wheel",
        "--tf",
        "2.21",
        "--mkl",
        "--skip-disk-check",
        "--recipes-dir",
        str(recipes),
        "--dist",
        str(tmp_path / "dist"),
        env={"TFBUILD_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert_error_then_hint(result, f"cannot download {dead}: ")


def test_a_toolchain_image_whose_packages_it_cannot_download(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """The toolchain image of 2.21 (Debian's snapshot, apt.llvm.org, github.com) through a proxy
    that is not there, as tests/docker/test_engine.py does below the CLI: the same two lines."""
    plan_args = ("--tf", "2.21", "--no-portable", "--base-image", base_image, "--python", "3.12")
    if engine.image_exists(toolchain_tag((*plan_args, "--skip-disk-check"), tmp_path)):
        pytest.skip("that toolchain image is on this engine already: it downloads nothing")
    source = Path(shutil.copytree(TREES / "tf-2.21-shaped", tmp_path / "tf"))
    proxies = dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), NOWHERE)
    result = run_cli(
        "wheel",
        *plan_args,
        "--skip-disk-check",
        "--source",
        str(source),
        "--dist",
        str(tmp_path / "dist"),
        env=proxies,
        timeout=600,
    )
    assert_error_then_hint(result, "cannot reach ")
    assert "while building the toolchain image" in result.stderr
