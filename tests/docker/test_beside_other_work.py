"""tfbuild beside other work on one engine: another user's real build runs while the engine tests that
create and remove containers, images and volumes run, and both succeed. The build is another
user's in every way the engine sees: its own labels (TFBUILD_LABELS), its own cache volume, its own
process; the engine tests are a run of their own (a nested pytest, with its own run label), as a
developer's `make test` would be beside it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.docker.conftest import base_image, engine
from tests.docker.test_wheel import (
    add_generated_sources,
    build_container,
    standin_source,
    wheel_argv,
)

__all__ = ["base_image", "engine"]
pytestmark = pytest.mark.docker


def test_a_build_and_the_engine_tests_on_one_engine_both_succeed(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    other = uuid.uuid4().hex[:10]
    volume = f"tfbuild-test-beside-{other}"
    source = standin_source(tmp_path)
    # 6 actions of 3 s each on 2 jobs: the build runs for a while after its container starts
    add_generated_sources(source, 6, "sleep 3", "Another user's slow action")
    dist = tmp_path / "dist"
    environ = {k: v for k, v in os.environ.items() if k != "TFBUILD_LABELS"}
    build = subprocess.Popen(
        wheel_argv(dist, volume, "--source", str(source), "--jobs", "2"),
        env={**environ, "TFBUILD_LABELS": f"other.user={other}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _build_id, container = build_container(engine, dist)
        tests = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
             "--basetemp", str(tmp_path / "inner"), "tests/docker/test_engine.py"],
            cwd=ROOT, env=environ, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        assert tests.returncode == 0, tests.stdout[-3000:]
        # the other user's build container was never among what the tests removed
        _, stderr = build.communicate(timeout=900)
        assert build.returncode == 0, stderr[-3000:]
        assert list(dist.glob("*.whl")), stderr[-3000:]
        assert "removed from outside" not in stderr
        assert container  # it ran while the tests started
    finally:
        if build.poll() is None:
            build.kill()
            build.communicate(timeout=60)
        engine.remove_volume(volume)
