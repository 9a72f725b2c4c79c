"""Smoke's JSON byte for byte: TensorFlow's messages read from recorded logs, a smoke report, and
``smoke --in-image``'s load report.

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tests.smoke.test_display import _report
from tfbuild.core import serial
from tfbuild.measure.run import Method
from tfbuild.smoke.loads import LoadReport
from tfbuild.smoke.messages import parse_messages
from tfbuild.smoke.options import Rules
from tfbuild.smoke.probe import ProbeResult

GOLDEN = GOLDEN_DIR / "smoke"
LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "tf-logs"


def test_messages_of_every_recorded_log() -> None:
    logs = sorted(p for p in LOGS.glob("*.txt"))
    assert logs
    compare_or_write(
        GOLDEN / "messages.json",
        json_text(
            {p.name: serial.to_data(parse_messages(p.read_text(encoding="utf-8"))) for p in logs}
        ),
    )


def test_a_smoke_report() -> None:
    compare_or_write(GOLDEN / "report.json", json_text(_report().to_json()))


def test_a_smoke_report_with_a_baseline_and_rules() -> None:
    guard = parse_messages((LOGS / "tf2.21-stock-this-machine.txt").read_text(encoding="utf-8"))
    baseline = ProbeResult(
        ok=False,
        returncode=-4,
        signal="SIGILL",
        failure="the import died on SIGILL",
        version=None,
        git_version=None,
        build_info={"is_cuda_build": False, "cpu_compiler": "clang-18"},
        guard=guard,
        tcmalloc_maps=("7f00-7f10 r-xp /usr/lib/libtcmalloc.so.4",),
    )
    report = dataclasses.replace(
        _report(),
        baseline=baseline,
        rules=Rules(allow_unused=True, allow_slower=("conv2d_nhwc",), min_margin=0.1),
        env_file="runtime.env",
        seconds=12.345,
        tcmalloc_expected=True,
        built_for="zen4",
        method=Method(pairs=5, ops=("exp", "tanh"), min_margin=0.1, budget=30),
    )
    compare_or_write(GOLDEN / "report-baseline.json", json_text(report.to_json()))


PROBE = {
    "glibc": "2.31",
    "python": "3.9.2",
    "libraries": [
        {"path": "tensorflow/libtensorflow_framework.so.2", "loads": True, "error": None},
        {
            "path": "tensorflow/python/_pywrap_tensorflow_internal.so",
            "loads": False,
            "error": "version `GLIBC_2.34' not found",
        },
    ],
    "wheel": {"name": "tensorflow-cpu", "tags": ["cp311-cp311-linux_x86_64"]},
    "installable": False,
    "not_installable": "the wheel is for Python 3.11, the image has 3.9.2",
    "install": {"by": "pip", "wheelhouse": True, "pip": "23.0.1", "error": None},
    "requirements": [
        {"requirement": "numpy>=1.26", "name": "numpy", "state": "installed", "version": "1.26.4"},
        {"requirement": "absl-py", "name": "absl-py", "state": "missing", "version": None},
        {
            "requirement": "x; os_name == 'nt'",
            "name": "x",
            "state": "not evaluated",
            "version": None,
        },
    ],
    "imports": [
        {
            "name": "tensorflow",
            "ok": False,
            "file": None,
            "error": "ImportError: x",
            "cause": "absl-py",
        },
        {
            "name": "tf_keras",
            "ok": True,
            "file": "tf_keras/__init__.py",
            "error": None,
            "cause": None,
        },
    ],
}


def test_a_load_report() -> None:
    compare_or_write(
        GOLDEN / "loads.json",
        json_text(serial.to_data(LoadReport.from_probe("tfbuild/base:bullseye", PROBE))),
    )
    bare = {"libraries": []}
    compare_or_write(
        GOLDEN / "loads-bare.json",
        json_text(serial.to_data(LoadReport.from_probe("tfbuild/base:bookworm", bare))),
    )
