"""The doctor's checks that need no engine: each verdict from recorded engine facts and plans."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import recorded_host, reprs_in
from tfbuild.build.doctor import (
    Check,
    engine_checks,
    expected_instructions,
    isa_text,
    network_check,
    resource_check,
    smoke_failure_text,
    speedup_text,
)
from tfbuild.core import serial
from tfbuild.core.engine import EngineInfo
from tfbuild.core.stats import sequential
from tfbuild.detect.host import HostFacts
from tfbuild.plan import GIB, BuildPlan, PlanOptions, make_plan
from tfbuild.recipes.images import load_base_images
from tfbuild.recipes.recipe import load_recipes


def info(**changes: object) -> EngineInfo:
    values: dict[str, object] = {
        "endpoint": "unix:///var/run/docker.sock",
        "server_version": "20.10.24+dfsg1",
        "api_version": "1.41",
        "storage_driver": "overlay2",
        "cgroup_version": "1",
        "cgroup_driver": "cgroupfs",
        "docker_root_dir": "/var/lib/docker",
        "free_disk_bytes": 78 * GIB,
        "warnings": (),
    }
    return EngineInfo(**(values | changes))  # type: ignore[arg-type]


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_a_healthy_engine_passes() -> None:
    checks = by_name(engine_checks(info(), disk_needed_gib=40))
    assert [c.status for c in checks.values()] == ["ok", "ok", "ok"]
    assert "Docker 20.10.24+dfsg1" in checks["engine"].detail


def test_vfs_warns_and_too_little_disk_fails_with_a_fix() -> None:
    checks = by_name(
        engine_checks(info(storage_driver="vfs", free_disk_bytes=12 * GIB), disk_needed_gib=40)
    )
    assert checks["storage driver"].status == "warn"
    assert "overlay2" in checks["storage driver"].fix
    assert checks["disk"].status == "fail"
    assert "12 GiB free" in checks["disk"].detail


def test_a_remote_engines_disk_is_not_measured_here() -> None:
    checks = by_name(engine_checks(info(free_disk_bytes=None), disk_needed_gib=40))
    assert checks["disk"].status == "skip"


def _plan(memory_gib: int, cpus: int) -> tuple[BuildPlan, HostFacts]:
    recipe = load_recipes().get("2.21")
    host = recorded_host("zen4", memory_gib=memory_gib, disk_gib=200, build_cpus=cpus)
    return make_plan(PlanOptions(), recipe, host, base_images=load_base_images()), host


def test_memory_for_less_than_one_compile_job_fails() -> None:
    plan, _ = _plan(2, 2)
    check = resource_check(plan, cpus=2, memory_bytes=2 * GIB)
    assert check.status == "fail"
    assert "at least" in check.fix


def test_few_cores_warn_and_a_big_machine_passes() -> None:
    plan, _ = _plan(24, 2)
    assert resource_check(plan, cpus=2, memory_bytes=24 * GIB).status == "warn"
    plan, _ = _plan(128, 32)
    check = resource_check(plan, cpus=32, memory_bytes=128 * GIB)
    assert check.status == "ok"
    assert f"--jobs={plan.resources.jobs}" in check.detail


def test_proxies_and_the_ca_bundle_are_reported(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("pem\n")
    check = network_check({"HTTPS_PROXY": "http://proxy:3128", "SSL_CERT_FILE": str(bundle)})
    assert check.status == "ok"
    assert "HTTPS_PROXY=http://proxy:3128" in check.detail and str(bundle) in check.detail
    broken = network_check({"SSL_CERT_FILE": str(tmp_path / "gone.pem")})
    assert broken.status == "fail"
    assert "gone.pem" in broken.detail


def test_the_expected_instructions_follow_the_planned_flags() -> None:
    recipe = load_recipes().get("2.21")
    images = load_base_images()
    for machine, expected in (
        ("zen4", ["zmm", "fma"]),
        ("haswell", ["ymm", "fma"]),
    ):
        host = recorded_host(machine, memory_gib=64, disk_gib=200)
        plan = make_plan(PlanOptions(), recipe, host, base_images=images)
        assert expected_instructions(plan) == expected
    baseline = make_plan(
        PlanOptions(target="x86_64"),
        recipe,
        recorded_host("zen4", memory_gib=64, disk_gib=200),
        base_images=images,
    )
    assert expected_instructions(baseline) == []


# --- the canary's findings, written for people ------------------------------------------------------

# As the canary's probe reports them (tfbuild/recipes/canary/probe.py) and run_canary keeps them.
FOUND = {"host": {"zmm": 32, "ymm": 0, "fma": 6}, "baseline": {"zmm": 0, "ymm": 0, "fma": 0}}


def test_the_instruction_check_counts_in_words() -> None:
    text = isa_text(["zmm", "fma"], FOUND)
    assert text == (
        "host build uses zmm and fma (32 zmm, 0 ymm, 6 fma instructions), "
        "the baseline none (0 zmm, 0 ymm, 0 fma)"
    )
    assert reprs_in(text) == []
    assert "no instructions counted" in isa_text(["ymm"], {})
    assert isa_text([], FOUND).startswith("host build uses no vector extensions (")


def _canary_verdict(host: list[float], baseline: list[float]) -> dict[str, Any]:
    """The verdict doctor keeps in its report: core.stats' over pairs timed 15 at a time."""
    data: dict[str, Any] = serial.to_data(sequential(host, baseline, per_look=15))
    return data


def test_the_speedup_gives_its_verdict_interval_and_each_median() -> None:
    rng = random.Random(7)
    baseline = [3.5e-3 * rng.lognormvariate(0, 0.02) for _ in range(75)]
    host = [b / 4.9 * rng.lognormvariate(0, 0.02) for b in baseline]
    found = _canary_verdict(host, baseline)
    text = speedup_text(found, {"host": 0.709, "baseline": 3.498})
    assert found["label"] == "faster" and found["n_candidate"] == 15  # decided at the first look
    low, high = found["interval"]
    assert text == (
        f"the host-targeted canary kernel is faster: {found['ratio']:.2f}x ({low:.2f}-{high:.2f}) "
        "the speed of the x86_64 build (15 alternating pairs: 0.709 ms host and 3.498 ms baseline)"
    )
    assert speedup_text(None, {}) == "the canary kernels could not be timed"


def test_a_noisy_canary_is_looked_at_again_and_said_undecided() -> None:
    """Pairs whose ratio swings by ±60 % around 1.1x: each look takes 15 pairs more, and after
    the fifth the answer is undecided, with the interval's reach; never "same"."""
    rng = random.Random(3)
    baseline = [1e-3 * rng.lognormvariate(0, 0.5) for _ in range(75)]
    host = [b / 1.1 * rng.lognormvariate(0, 0.5) for b in baseline]
    found = _canary_verdict(host, baseline)
    assert (found["label"], found["looks"], found["n_candidate"]) == ("undecided", 5, 75)
    text = speedup_text(found, {"host": 1.0, "baseline": 1.1})
    assert re.search(r"is undecided: \d\.\d\dx \(±\d+%\) the speed", text), text


def test_a_canary_wheel_that_did_not_run_is_named_with_its_exit_and_last_error() -> None:
    smoke = {
        "host": {"ok": False, "exit_code": 132, "stderr": "Traceback ...\nIllegal instruction\n"},
        "baseline": {"ok": True},
    }
    assert smoke_failure_text(smoke) == "the host wheel did not run (exit 132: Illegal instruction)"
    both = smoke_failure_text({"host": {"ok": False}, "baseline": {"ok": False}})
    assert both == "the host wheel did not run; the baseline wheel did not run"


def test_a_check_wraps_under_its_detail_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Marks and names stay a column; a long detail and its fix wrap beneath the detail, whole
    words only, and nothing is lost."""
    from tfbuild.cli.display import print_doctor_check

    monkeypatch.setenv("COLUMNS", "80")
    check = Check(
        name="instruction set",
        status="fail",
        detail=isa_text(["zmm", "fma"], FOUND)
        + " "
        + speedup_text(_canary_verdict([0.7e-3] * 15, [3.4e-3] * 15), {"host": 0.7}),
        fix="The planned flags did not reach the compiler: report it.",
    )
    print_doctor_check(check)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("✗ instruction set  host build uses ")
    assert all(line.startswith(" " * 19) and line[19] != " " for line in lines[1:])
    assert [line for line in lines if "fix: " in line] == [
        " " * 19 + "fix: The planned flags did not reach the compiler: report it."
    ]
    shown = " ".join(" ".join(line[1:].split()) for line in lines)
    assert " ".join(check.detail.split()) in shown and reprs_in(shown) == []
