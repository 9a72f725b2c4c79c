"""`tfbuild wheel` runs the preflight right after it has the source and before anything else: a tree
that does not fit is refused in seconds with exit 4, and the real engine shows that no toolchain
image was built and no build container was started (and nothing was written to dist/)."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli, this_run_label
from tfbuild.core.engine import input_hash
from tfbuild.plan.decode import decode_plan
from tfbuild.plan.render import render_files
from tfbuild.recipes import canary

pytestmark = pytest.mark.docker

TREES = ROOT / "tests" / "fixtures" / "trees"


#: The real CLI in a subprocess, with a build's time to finish.
tfbuild = functools.partial(run_cli, timeout=300)


def build_containers(engine: Any) -> set[str]:
    return set(engine.containers(label=this_run_label()))


def started_on(engine: Any, before: set[str], source: Path) -> list[str]:
    """Build containers that appeared since ``before`` and mount ``source`` (other builds may run
    on the same engine meanwhile: only this one's would mount this tree)."""
    new = sorted(build_containers(engine) - before)
    if not new:
        return []
    inspected = subprocess.run(
        ["docker", "inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", *new],
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in inspected.stdout.splitlines() if str(source) in line.split()]


def toolchain_tag(plan_args: tuple[str, ...], tmp_path: Path) -> str:
    """The tag `tfbuild wheel` would build the toolchain image under (its input hash)."""
    planned = tfbuild("plan", *plan_args, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = decode_plan(json.loads(planned.stdout))
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text(render_files(plan)["Dockerfile"])
    return f"tfbuild/toolchain:{input_hash(context)[:16]}"


def test_a_release_tree_that_does_not_fit_is_refused_before_any_image(
    engine: Any, tmp_path: Path
) -> None:
    source = Path(shutil.copytree(TREES / "tf-2.21-shaped", tmp_path / "tf"))
    (source / ".bazelversion").write_text("6.5.0\n")
    plan_args = ("--tf", "2.21", "--target", "x86_64_v3", "--python", "3.12", "--skip-disk-check")
    tag = toolchain_tag(plan_args, tmp_path)
    assert not engine.image_exists(tag)
    containers = build_containers(engine)
    dist = tmp_path / "dist"
    result = tfbuild("wheel", *plan_args, "--source", str(source), "--dist", str(dist))
    assert result.returncode == 4, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("tfbuild: error: ")]
    assert line.startswith(
        f"tfbuild: error: the source tree {source} does not fit the plan: .bazelversion:1: the "
        "tree wants bazel 6.5.0, the plan runs bazel 7.4.1"
    )
    assert line.endswith("Nothing was built: no image, no container.")
    assert not engine.image_exists(tag)
    assert started_on(engine, containers, source) == []
    assert not dist.exists()


def test_the_canary_path_runs_the_preflight_too(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """The STAND-IN tree passes it in every canary build (tests/docker/test_wheel.py); without its
    .bazelrc, which imports the rendered rc file, it is refused like any tree."""
    source = canary.copy_tree(tmp_path / "src")
    (source / ".bazelrc").unlink()
    containers = build_containers(engine)
    dist = tmp_path / "dist"
    result = tfbuild(
        "wheel",
        "--canary",
        "--base-image",
        base_image,
        "--skip-disk-check",
        "--source",
        str(source),
        "--dist",
        str(dist),
    )
    assert result.returncode == 4, result.stderr
    assert (
        f"the source tree {source} does not fit the plan: .bazelrc: the tree has no .bazelrc"
        in (result.stderr)
    )
    assert started_on(engine, containers, source) == []
    assert not dist.exists()
