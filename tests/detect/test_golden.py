"""``tfbuild detect --json`` byte for byte: recorded reports for real dumps and a recorded live host.

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.conftest import CPUINFO_DIR, cpuinfo_fixture, cpuinfo_fixtures, in_json, run_cli
from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tfbuild.core import serial
from tfbuild.detect.cuda import locate_cuda
from tfbuild.detect.gather import gather
from tfbuild.detect.nvidia import report_from_outputs
from tfbuild.detect.report import DetectReport, TensorflowSupport
from tfbuild.detect.system import Cache, Disk, Memory, PythonInfo, SystemInfo

GOLDEN = GOLDEN_DIR / "detect"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def printed(report: DetectReport) -> str:
    """What ``detect --json`` prints for ``report``, with the dumps' folder written ``<cpuinfo>``."""
    return json_text(serial.to_data(report)).replace(in_json(CPUINFO_DIR), "<cpuinfo>")


@pytest.mark.parametrize("dump", [p.name for p in cpuinfo_fixtures()])
def test_one_dump(dump: str) -> None:
    report = gather(cpuinfo_files=(cpuinfo_fixture(dump),), compiler_spec="gcc-12.2")
    compare_or_write(GOLDEN / f"dump-{dump}.json", printed(report))


def test_several_dumps_with_a_target_and_why_not() -> None:
    dumps = tuple(cpuinfo_fixture(n) for n in ("zen4", "sapphirerapids", "alderlake", "zen"))
    report = gather(
        cpuinfo_files=dumps,
        compiler_spec="clang-18.1.8",
        target="x86_64_v3",
        why_not=("haswell", "x86_64_v4"),
    )
    compare_or_write(GOLDEN / "several-x86.json", printed(report))


def test_arm_and_power_with_a_target() -> None:
    dumps = tuple(cpuinfo_fixture(n) for n in ("neoverse_n1", "neoverse_v2"))
    report = gather(cpuinfo_files=dumps, compiler_spec="gcc-13", target="armv8.2a")
    compare_or_write(GOLDEN / "several-arm.json", printed(report))


def live_report() -> DetectReport:
    """A live report from recorded parts: a dump, a recorded CUDA tree and nvidia-smi output."""
    base = gather(cpuinfo_files=(cpuinfo_fixture("zen5-vm"),), compiler_spec="gcc-12.2")
    cuda = locate_cuda(
        root=FIXTURES / "cuda" / "classic",
        env={"PATH": "/usr/local/cuda/bin", "CUDA_HOME": "/usr/local/cuda-11.8"},
        site_packages=(),
    )
    nvidia_dir = FIXTURES / "nvidia" / "l40s-595.80"
    nvidia = report_from_outputs(
        query_csv=(nvidia_dir / "query.csv").read_text(encoding="utf-8"),
        smi_text=(nvidia_dir / "nvidia-smi.txt").read_text(encoding="utf-8"),
    )
    system = SystemInfo(
        os="Debian GNU/Linux 12 (bookworm)",
        kernel="6.1.0-28-amd64",
        machine="x86_64",
        glibc="2.36",
        python=PythonInfo(
            version="3.11.2",
            implementation="CPython",
            executable="/usr/bin/python3",
            abi_tag="cp311",
        ),
        logical_cpus=16,
        usable_cpus=8,
        caches=(
            Cache(level=1, type="Data", size_kib=48, shared_by=2),
            Cache(level=2, type="Unified", size_kib=1024, shared_by=2),
            Cache(level=3, type="Unified", size_kib=32768, shared_by=16),
        ),
        memory=Memory(total_bytes=64 << 30, available_bytes=50 << 30, cgroup_limit_bytes=32 << 30),
        disk=Disk(path="/home/user/.cache/tfbuild", free_bytes=400 << 30, total_bytes=1 << 40),
    )
    support = (
        TensorflowSupport(
            version="2.15.1", python_ok=True, cpu_ok=True, cuda="12.2", cuda_ok=True, note=""
        ),
        TensorflowSupport(
            version="2.20.0",
            python_ok=False,
            cpu_ok=True,
            cuda=None,
            cuda_ok=None,
            note="Python 3.11 is outside 3.12-3.13",
        ),
    )
    return DetectReport(
        live=True,
        machines=base.machines,
        system=system,
        cuda=cuda,
        nvidia=nvidia,
        tensorflow=support,
    )


def test_a_live_host() -> None:
    compare_or_write(GOLDEN / "live.json", printed(live_report()))


def test_a_live_host_without_disk_gpu_or_driver() -> None:
    report = live_report()
    assert report.system is not None
    bare = dataclasses.replace(
        report,
        system=dataclasses.replace(
            report.system,
            disk=None,
            glibc=None,
            caches=(),
            memory=Memory(total_bytes=None, available_bytes=None, cgroup_limit_bytes=None),
        ),
        cuda=locate_cuda(root=FIXTURES / "cuda" / "broken", env={}, site_packages=()),
        nvidia=report_from_outputs(query_csv=None),
        tensorflow=(),
    )
    compare_or_write(GOLDEN / "live-bare.json", printed(bare))


def test_golden_files_are_valid_json() -> None:
    for path in GOLDEN.glob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))


def test_the_command_prints_the_same_bytes() -> None:
    dump = cpuinfo_fixture("zen4")
    result = run_cli("detect", "--json", "--cpuinfo", str(dump), "--compiler", "gcc-12.2")
    assert result.returncode == 0, result.stderr
    compare_or_write(
        GOLDEN / f"dump-{dump.name}.json", result.stdout.replace(in_json(CPUINFO_DIR), "<cpuinfo>")
    )
