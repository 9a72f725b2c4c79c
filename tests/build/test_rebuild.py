"""A rebuild from a receipt, without an engine: the plan it takes, the pins, the source it needs."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import wheels
from tests.conftest import recorded_host, run_cli
from tests.receipts import make_receipt, write_receipt
from tfbuild.build import BuildRun
from tfbuild.errors import InputError, UnsupportedError
from tfbuild.plan import PlanOptions, make_plan
from tfbuild.rebuild import load_receipt, plan_from_receipt, rebuild_run
from tfbuild.receipt import Receipt, SourceRecord, receipt_path
from tfbuild.recipes import load_base_images, load_recipes
from tfbuild.render import render_files, toolchain_packages


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    path = tmp_path / "tensorflow_cpu-2.21.0+zen4-cp311-cp311-linux_x86_64.whl"
    path.write_bytes(b"a wheel")
    return path


def real_receipt(wheel: Path, **changes: object) -> Receipt:
    """A receipt whose plan is a real plan (2.21, oneDNN, for a recorded Zen 4 on 64 cores)."""
    plan = make_plan(
        PlanOptions(variant="mkl"),
        load_recipes().get("2.21"),
        recorded_host("zen4", memory_gib=256, disk_gib=500, build_cpus=64),
        base_images=load_base_images(),
    )
    packages = {name: f"1.0-{name}" for name in toolchain_packages(plan)} | {"libc6": "2.39-0"}
    data = make_receipt(wheel, target=plan.target, variant="mkl", plan_overrides=plan.to_json())
    receipt = Receipt.from_json(data)
    inputs = dataclasses.replace(receipt.inputs, packages=packages)
    return dataclasses.replace(receipt, inputs=inputs, **changes)  # type: ignore[arg-type]


def test_the_rebuild_keeps_the_plan_and_fits_the_resources_to_this_machine(wheel: Path) -> None:
    receipt = real_receipt(wheel)
    here = recorded_host("haswell", memory_gib=16, disk_gib=100, build_cpus=2)
    planned = plan_from_receipt(receipt, host=here)
    plan = planned.plan
    assert planned.recipe is None
    original = receipt.plan
    # What is built is the receipt's: target, flags, configs, rc lines, base image, versions.
    for key in ("target", "cflags", "bazel_configs", "rc_lines", "base_image", "bazel"):
        assert plan.to_json()[key] == original[key], key
    # How fast it runs is this machine's: 2 jobs, not 64.
    assert "--jobs=64" in original["build_options"] and "--jobs=2" in plan.build_options
    assert plan.resources.jobs == 2
    # Every toolchain package at the version the receipt records, and the Dockerfile says so.
    assert dict(plan.package_versions) == {name: f"1.0-{name}" for name in toolchain_packages(plan)}
    dockerfile = render_files(plan)["Dockerfile"]
    assert "python3-dev=1.0-python3-dev" in dockerfile and "libc6" not in dockerfile
    # 2.21's hermetic clang is bazel's download: the image installs no compiler.
    assert not [name for name, _ in plan.package_versions if name.startswith(("clang", "lld"))]


def test_a_receipt_without_a_package_version_is_refused(wheel: Path) -> None:
    receipt = real_receipt(wheel)
    packages = dict(receipt.inputs.packages)
    del packages["zip"]
    spoilt = dataclasses.replace(
        receipt, inputs=dataclasses.replace(receipt.inputs, packages=packages)
    )
    with pytest.raises(InputError, match="records no version of zip"):
        plan_from_receipt(spoilt, host=recorded_host("haswell", memory_gib=16, disk_gib=100))


def test_an_edited_plan_is_refused(wheel: Path) -> None:
    data = real_receipt(wheel).to_json()
    data["plan"]["cflags"] = ["-march=native"]
    receipt_path(wheel).write_text(json.dumps(data))
    with pytest.raises(InputError, match="was changed after the build"):
        load_receipt(wheel, None)


def test_a_tarball_receipt_pins_the_source(wheel: Path, tmp_path: Path) -> None:
    receipt = real_receipt(wheel)
    run = rebuild_run(receipt, BuildRun(dist=tmp_path / "dist"))
    assert run.source_sha256 == receipt.inputs.source.sha256
    assert run.recipe_sha256 == receipt.inputs.recipe_sha256


def _git(tree: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(
        ["git", "-C", str(tree), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_a_checkout_receipt_needs_the_same_commit(wheel: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tensorflow"
    (tree / "tensorflow" / "tools" / "pip_package").mkdir(parents=True)
    (tree / "README").write_text("one\n")
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "one")
    built_at = _git(tree, "rev-parse", "HEAD")
    source = SourceRecord(kind="directory", path=str(tree), commit=built_at, dirty=False)
    receipt = real_receipt(wheel)
    receipt = dataclasses.replace(
        receipt, inputs=dataclasses.replace(receipt.inputs, source=source)
    )
    with pytest.raises(InputError, match="Pass it with --source DIR"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist"))
    assert rebuild_run(receipt, BuildRun(dist=tmp_path / "dist", source=tree)).source == tree
    (tree / "README").write_text("two\n")
    with pytest.raises(InputError, match="uncommitted changes"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist", source=tree))
    _git(tree, "commit", "-q", "-am", "two")
    with pytest.raises(InputError, match=f"the receipt names commit {built_at}"):
        rebuild_run(receipt, BuildRun(dist=tmp_path / "dist", source=tree))


def test_a_rebuild_on_another_architecture_is_refused(wheel: Path) -> None:
    """The receipt's plan is for x86_64; a real aarch64 machine (a recorded Neoverse V2) cannot run
    its toolchain image, compiler or flags, and is told so before anything is built."""
    receipt = real_receipt(wheel)
    arm = recorded_host("neoverse_v2", memory_gib=64, disk_gib=500)
    assert arm.build_host_architecture == "aarch64"
    with pytest.raises(
        UnsupportedError, match="was built on x86_64, and this build host is aarch64"
    ):
        plan_from_receipt(receipt, host=arm)


def test_verify_refuses_a_wheel_that_is_not_the_one_its_receipt_describes(tmp_path: Path) -> None:
    """Issue 21, item 3: one flipped byte in a member's compressed data. verify checks the wheel's
    sha256 and size against its receipt before any build: one line naming both hashes, exit 3."""
    wheel = wheels.make_wheel(tmp_path, "canary-1.0-py3-none-any.whl")
    write_receipt(wheel)
    built = hashlib.sha256(wheel.read_bytes()).hexdigest()
    wheels.flip_compressed_byte(wheel, "canary/__init__.py")
    now = hashlib.sha256(wheel.read_bytes()).hexdigest()
    size = wheel.stat().st_size
    result = run_cli("verify", str(wheel), timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"tfbuild: error: {wheel.name} is not the wheel its receipt describes: its sha256 is {now} "
        f"({size} bytes), and {receipt_path(wheel)} records {built} ({size} bytes); nothing was "
        "rebuilt. Verify the wheel that build wrote (fetch it again), or pass its own receipt "
        "with --receipt FILE."
    ]
