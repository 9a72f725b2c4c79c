"""`tfbuild base`: the debootstrap-made base image, reused by tag, and its refusals."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.conftest import run_cli
from tfbuild.base import make_base_image
from tfbuild.errors import UsageError


def test_the_base_image_is_reused_by_tag(engine: Any, base_image: str) -> None:
    result = make_base_image(engine, suite="bookworm", tag=base_image)
    assert result.created is False
    assert result.image_id == engine.image_id(base_image)


def test_the_base_image_has_what_the_pipeline_needs(engine: Any, base_image: str) -> None:
    out = engine.run(
        base_image, ["sh", "-c", "gcc --version; python3 --version; objdump --version"]
    )
    assert out.exit_code == 0


def test_cli_reports_reuse(base_image: str) -> None:
    result = run_cli("base", "--suite", "bookworm", "--tag", base_image)
    assert result.returncode == 0, result.stderr
    assert "already there, reused" in result.stdout


def test_unknown_suite_is_a_usage_error(engine: Any) -> None:
    with pytest.raises(UsageError, match="unknown --suite 'buster-backports'"):
        make_base_image(engine, suite="buster-backports", tag="tfbuild-test/none:never")


def test_the_image_came_from_debootstrap_not_a_registry(engine: Any, base_image: str) -> None:
    labels = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", base_image],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert '"org.tfbuild.base":"bookworm"' in labels


def test_no_engine_is_one_line_and_exit_5() -> None:
    result = run_cli("base", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 5, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "cannot reach the Docker engine at unix:///nonexistent/docker.sock" in lines[0]
    assert "Traceback" not in result.stderr
