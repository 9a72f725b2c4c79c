"""The doctor's checks that need no engine: each verdict from recorded engine facts and plans."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import recorded_host
from tfbuild.detect.host import HostFacts
from tfbuild.doctor import (
    Check,
    engine_checks,
    expected_instructions,
    network_check,
    resource_check,
)
from tfbuild.engine import EngineInfo
from tfbuild.plan import GIB, BuildPlan, PlanOptions, make_plan
from tfbuild.recipes import load_base_images, load_recipes


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
