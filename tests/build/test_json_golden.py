"""Golden JSON of build/, core.engine and recipes values, built in code and through the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import as_a_process
from tests.conftest import in_json
from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tfbuild.build.base_images import MadeImage
from tfbuild.build.container import Attempt
from tfbuild.build.doctor import CanaryBuild, CanaryReport, Check, DoctorReport
from tfbuild.build.preflight.report import Finding, PreflightReport
from tfbuild.build.rebuild import VerifyResult
from tfbuild.build.release_check import ReleaseCheck
from tfbuild.build.run import WheelResult
from tfbuild.build.source_tree import Source
from tfbuild.core import serial
from tfbuild.core.engine import EngineInfo, RunResult
from tfbuild.core.stats import sequential
from tfbuild.wheel.receipt import InstructionCheck, SmokeOutcome
from tfbuild.wheel.wheeldiff import WheelDiff

GOLDEN = GOLDEN_DIR / "build"
ROOT = Path(__file__).resolve().parents[2]  # as tfbuild names its own files
TREES = ROOT / "tests" / "fixtures" / "trees"


def as_json(value: Any) -> Any:
    """The JSON the CLI prints for ``value``."""
    return serial.to_data(value) if not hasattr(value, "to_json") else value.to_json()


FINDINGS = (
    Finding(check="bazel", status="ok", what="Bazel 7.4.1", file=".bazelversion", line=1),
    Finding(
        check="configs",
        status="fail",
        what="no config cuda",
        file=".bazelrc",
        why="the plan asks for it",
        fix="Pick another recipe.",
    ),
    Finding(check="python", status="note", what="hermetic Python"),
)
REPORT = PreflightReport(
    tree="/src/tf", plan="TensorFlow 2.21.0 cpu, Python 3.11", findings=FINDINGS
)
SOURCE = Source(
    path=Path("/cache/tf-2.21.0"),
    kind="tarball",
    origin="https://example.org/v2.21.0.tar.gz",
    sha256="a" * 64,
    pinned=True,
    git_commit=None,
    git_dirty=None,
    epoch=1700000000,
)


CANARY = CanaryReport(
    isa=InstructionCheck(
        expected=("zmm", "fma"),
        found={"host": {"zmm": 32, "ymm": 0, "fma": 6}, "baseline": {"zmm": 0, "ymm": 0, "fma": 0}},
        ok=True,
    ),
    smoke={
        "host": SmokeOutcome(ok=True),
        "baseline": SmokeOutcome(ok=False, exit_code=132, stderr="Illegal instruction"),
    },
    median_ms={"host": 0.7, "baseline": 3.4},
    rounds=15,
    speedup=4.86,
    verdict=sequential([0.7e-3] * 15, [3.4e-3] * 15, per_look=15),
    base_image="tfbuild/base:bookworm",
    builds={
        name: CanaryBuild(
            wheel=Path(f"/dist/{name}/tfbuild_canary.whl"),
            receipt=Path(f"/dist/{name}/tfbuild_canary.json"),
            target=target,
            cflags=cflags,
            seconds=12.3,
            toolchain_image_built=name == "host",
            sha256="f" * 64,
        )
        for name, target, cflags in (
            ("host", "x86_64_v4", ("-march=x86-64-v4",)),
            ("baseline", "x86_64", ("-march=x86-64", "-mtune=generic")),
        )
    },
)


def values() -> dict[str, Any]:
    return {
        "engine_info": EngineInfo(
            endpoint="unix:///var/run/docker.sock",
            server_version="27.3.1",
            api_version="1.47",
            storage_driver="overlay2",
            cgroup_version="2",
            cgroup_driver="systemd",
            docker_root_dir="/var/lib/docker",
            free_disk_bytes=123456789,
            warnings=("no swap limit",),
        ),
        "run_result": RunResult(
            exit_code=137, oom_killed=True, container_id="c0ffee", duration_s=12.3456789
        ),
        "check": Check(name="engine", status="ok", detail="Docker 27"),
        "doctor": DoctorReport(
            checks=[
                Check(name="engine", status="ok", detail="Docker 27"),
                Check(name="disk", status="fail", detail="3 GiB free", fix="Free some disk."),
            ],
            canary=CANARY,
        ),
        "doctor_ok": DoctorReport(checks=[Check(name="engine", status="ok", detail="d")]),
        "finding": FINDINGS[0],
        "preflight": REPORT,
        "preflight_passed": PreflightReport(tree="/t", plan="p", findings=FINDINGS[:1]),
        "source": SOURCE.record(),
        "source_dir": Source(
            path=Path("/src/tf"),
            kind="directory",
            origin="/src/tf",
            sha256=None,
            pinned=False,
            git_commit="b" * 40,
            git_dirty=False,
            epoch=None,
        ).record(),
        "release_check": ReleaseCheck(
            recipe="recipes/2.21.toml",
            tensorflow="2.21.0",
            tree="/src/tf",
            source=SOURCE.record(),
            plans=(REPORT,),
            recipe_findings=FINDINGS[:1],
            refused=FINDINGS[2:],
        ),
        "attempt": Attempt(jobs=8, exit_code=0, oom_killed=False, seconds=3.14159265),
        "made_image": MadeImage(
            tag="tfbuild/base:bookworm", image_id="sha256:1", created=True, seconds=9.87654
        ),
        "wheel_result": WheelResult(
            wheel=Path("/dist/tf.whl"),
            receipt=Path("/dist/tf.whl.receipt.json"),
            env_file=Path("/dist/tf.env"),
            log=Path("/dist/tf.log"),
            sha256="c" * 64,
            size=1234,
            seconds=100.123456,
            image_built=True,
            attempts=(
                Attempt(jobs=8, exit_code=137, oom_killed=True, seconds=1.23456),
                Attempt(jobs=4, exit_code=0, oom_killed=False, seconds=2.5),
            ),
            replaced=False,
            data=None,  # type: ignore[arg-type]
            warnings=("glibc floor",),
        ),
        "verify": VerifyResult(
            wheel=Path("/dist/tf.whl"),
            sha256="d" * 64,
            receipt_sha256="d" * 64,
            rebuilt_sha256="e" * 64,
            reproducible=False,
            diff=WheelDiff(
                a="a.whl",
                b="b.whl",
                sha256_a="d" * 64,
                sha256_b="e" * 64,
                only_in_a=("x.py",),
                only_in_b=(),
                changed=(),
                entries=(),
                layout=("member order",),
            ),
            rebuild_seconds=55.55555,
            inputs_covered=False,
            warnings=("UNCOVERED",),
        ),
    }


@pytest.mark.parametrize("name", sorted(values()))
def test_value_json_is_golden(name: str) -> None:
    compare_or_write(GOLDEN / f"{name}.json", json_text(as_json(values()[name])))


def cli(*args: str) -> str:
    """What ``tfbuild ARGS`` prints, run in this process with this environment (no $COLUMNS)."""
    return as_a_process(args, {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120).stdout


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("cli_recipes", ("recipes", "--json")),
        ("cli_recipes_show", ("recipes", "show", "2.21")),
        ("cli_plan_source_221", ("plan", "--source", str(TREES / "tf-2.21-shaped"), "--json")),
        ("cli_plan_source_218", ("plan", "--source", str(TREES / "tf-2.18-shaped"), "--json")),
    ],
)
def test_cli_json_is_golden(name: str, args: tuple[str, ...]) -> None:
    text = cli(*args).replace(in_json(ROOT), "<ROOT>")
    if args[0] == "plan":  # the plan itself depends on this host: its preflight does not
        text = json_text(json.loads(text)["preflight"])
    compare_or_write(GOLDEN / f"{name}.json", text)
