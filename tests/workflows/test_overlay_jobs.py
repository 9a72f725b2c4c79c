"""The workflow's overlay jobs: planned by ``tfbuild matrix --overlays``, built by ``tfbuild overlay``
on a runner whatever its CPU, published with the wheels.

The plan step's script runs for real with the project's tfbuild; one overlay job's steps run here for
real (docker: the overlay compiles in its toolchain image, against the real stock wheel), for a
target this CPU cannot run, and the release's index step then lists what it made. Only what needs
GitHub (checkout, setup-python, artifacts) and root (debootstrap) is not run: the base images are
the ones ``make base-image`` made, as that step makes them on a runner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.docker.conftest import engine, new_base_image, old_base_image
from tests.workflows.test_workflows import (
    PLAN_OVERLAYS,
    WORKFLOWS,
    load,
    run_step,
    step,
)

__all__ = ["engine", "new_base_image", "old_base_image"]  # the real-engine fixtures


def _overlays(tmp_path: Path, values: dict[str, str]) -> list[dict[str, Any]]:
    workflow = load(WORKFLOWS / "wheels.yml")
    result, output = run_step(
        step(workflow, "plan", containing=PLAN_OVERLAYS), cwd=tmp_path, values=values
    )
    assert result.returncode == 0, result.stderr
    lines = output.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("overlays="), lines
    matrix = json.loads(lines[0].removeprefix("overlays="))
    assert list(matrix) == ["include"] and matrix["include"]
    assert [e["name"] for e in matrix["include"]] == result.stderr.splitlines()
    return list(matrix["include"])


def _keys_the_overlay_job_uses() -> set[str]:
    job = load(WORKFLOWS / "wheels.yml")["jobs"]["overlay"]
    return set(re.findall(r"\bmatrix\.([A-Za-z_][\w-]*)", json.dumps(job)))


def test_the_overlay_job_takes_the_plan_jobs_overlays() -> None:
    jobs = load(WORKFLOWS / "wheels.yml")["jobs"]
    overlay = jobs["overlay"]
    assert overlay["needs"] == "plan"
    assert overlay["strategy"] == {
        "fail-fast": False,
        "matrix": "${{ fromJSON(needs.plan.outputs.overlays) }}",
    }
    assert jobs["plan"]["outputs"]["overlays"] == "${{ steps.overlays.outputs.overlays }}"
    assert step(load(WORKFLOWS / "wheels.yml"), "plan", containing=PLAN_OVERLAYS)["id"] == (
        "overlays"
    )
    assert _keys_the_overlay_job_uses() == {"name", "python", "args"}
    # the release waits for the overlays, and publishes them with the wheels
    release = jobs["release"]
    assert release["needs"] == ["build", "overlay"]
    patterns = [
        s["with"]["pattern"] for s in release["steps"] if "download-artifact" in s.get("uses", "")
    ]
    assert patterns == ["wheel-*", "overlay-*"]


def test_the_overlays_step_yields_what_the_overlay_job_uses(tmp_path: Path) -> None:
    from tfbuild.plan.matrix import DEFAULT_OVERLAY_TARGETS

    entries = _overlays(tmp_path, {})
    assert [e["target"] for e in entries] == list(DEFAULT_OVERLAY_TARGETS)
    for entry in entries:
        assert _keys_the_overlay_job_uses() <= set(entry)
        assert entry["name"].startswith("overlay-")  # its artifact's name: the release's pattern
    chosen = _overlays(tmp_path, {"inputs.overlay_targets": "zen4,icelake", "inputs.tf": "2.20"})
    assert [(e["tf"], e["target"]) for e in chosen] == [("2.20", "zen4"), ("2.20", "icelake")]
    # a pull request builds one: x86_64_v4 of the newest release
    (pr,) = _overlays(tmp_path, {"github.event_name": "pull_request"})
    assert pr["target"] == "x86_64_v4" and pr["tf"] == entries[0]["tf"]


def test_the_base_image_step_makes_the_suites_the_overlays_image_needs() -> None:
    from tfbuild.overlay.image import choose
    from tfbuild.recipes.recipe import load_recipes

    spec = choose(load_recipes(()).recipes[-1].compiler)
    script = step(load(WORKFLOWS / "wheels.yml"), "overlay", containing="base --suite")["run"]
    (suites,) = re.findall(r"for suite in ([a-z ]+); do sudo", script)
    assert set(suites.split()) == {spec.suite, spec.sysroot_suite}
    assert "debootstrap" in script


@pytest.mark.docker
def test_one_overlay_job_runs_here_for_a_cpu_it_lacks_and_reaches_the_index(
    engine: Any, new_base_image: str, old_base_image: str, stock_python: str, tmp_path: Path
) -> None:
    """The plan step's entry for a target this CPU lacks, then the job's ``tfbuild overlay`` step
    as GitHub runs it: the overlay is built, its receipt says the check is pending and why, the
    files the upload step names are there; the release's index step lists the overlay."""
    from tests.overlays import foreign_target
    from tfbuild.wheel.overlay_receipt import read_overlay_receipt
    from tfbuild.wheel.receipt import receipt_path

    target, missing = foreign_target()
    (entry,) = _overlays(tmp_path, {"inputs.overlay_targets": target})
    workflow = load(WORKFLOWS / "wheels.yml")
    build = step(workflow, "overlay", containing="tfbuild overlay")
    values = {f"matrix.{key}": value for key, value in entry.items()}
    result, _ = run_step(build, cwd=tmp_path, values=values, timeout=900)
    assert result.returncode == 0, result.stderr
    first = next(line for line in result.stderr.splitlines() if line.startswith("[overlay]"))
    assert first.startswith("[overlay] this CPU lacks ") and f" of {target}: " in first
    dist = tmp_path / "dist"
    (wheel,) = dist.glob("*.whl")
    receipt = read_overlay_receipt(receipt_path(wheel), wheel=wheel)
    assert receipt.target == target and receipt.image is not None
    assert receipt.pending and set(receipt.pending) <= missing | set(receipt.features)
    assert set(receipt.pending) & missing and receipt.checks == ()
    assert "special-value check pending" in result.stdout
    upload = next(
        s for s in workflow["jobs"]["overlay"]["steps"] if "upload-artifact" in s.get("uses", "")
    )
    assert upload["with"]["path"].split() == ["dist/*.whl", "dist/*.json"]
    assert sorted(p.name for p in dist.iterdir() if p.is_file()) == sorted(
        [wheel.name, receipt_path(wheel).name]
    )
    index = step(workflow, "release", containing="tfbuild index")
    extra = {
        "GITHUB_REF_NAME": "v1.2.3",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
    }
    indexed, _ = run_step(
        {**index, "env": {**index.get("env", {}), **extra}}, cwd=tmp_path, values={}
    )
    assert indexed.returncode == 0, indexed.stderr
    assert wheel.name.replace("+", "%2B") in (dist / "index.html").read_text()
    assert wheel.name in (dist / "SHA256SUMS").read_text()
