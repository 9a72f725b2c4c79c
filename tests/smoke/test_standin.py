"""`tfbuild smoke` of the canary's STAND-IN wheel, without an engine: the real canary wheel and
receipt a `tfbuild wheel --canary` wrote (tests/fixtures/receipts/, from before the stand-in had a
name of its own: its version label says what it is), installed, imported and run; what tells a
stand-in; the report's JSON byte for byte and its text in 80 columns.

Regenerate the golden file after an intended change with TFBUILD_UPDATE_GOLDEN=1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import receipts, wheels
from tests.conftest import one_error_line, run_cli
from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tfbuild.core import serial
from tfbuild.detect import cpu
from tfbuild.smoke.standin import (
    Instructions,
    StandinSmoke,
    expected_kinds,
    instruction_failures,
    is_standin_wheel,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "receipts"
CANARY = "tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v4-py3-none-manylinux_2_34_x86_64.whl"
V4 = ("SSE3", "SSE4.1", "SSE4.2", "AVX", "AVX2", "AVX512F", "AVX512_VNNI", "FMA")


def canary_copy(into: Path, *, receipt: bool = True) -> Path:
    into.mkdir()
    shutil.copyfile(FIXTURES / CANARY, into / CANARY)
    if receipt:
        name = CANARY.removesuffix(".whl") + ".json"
        shutil.copyfile(FIXTURES / name, into / name)
    return into / CANARY


def test_a_real_canary_is_tested_as_the_stand_in_it_is(tmp_path: Path) -> None:
    """It was built for x86_64_v4: here it runs and its zmm and FMA are counted, or, on a CPU
    without AVX-512, it dies with SIGILL and the failure says so (exit 7)."""
    wheel = canary_copy(tmp_path / "dist")
    result = run_cli("smoke", str(wheel), "--json", timeout=300)
    if "AVX512F" not in cpu.guard_features(cpu.host_cpuinfo()):
        line = one_error_line(result, 7, "SIGILL", report=True)
        assert "built for x86_64_v4" in line
        return
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["schema"] == "tfbuild.smoke-standin/1"
    assert (report["passed"], report["ran"], report["module"]) == (True, True, "tfbuild_canary")
    assert report["flags"] == report["receipt_flags"] == ["-march=x86-64-v4", "-mtune=generic",
        "-mavx512vnni", "-mavx512bf16", "-mavxvnni"]  # fmt: skip
    assert report["instructions"]["expected"] == ["zmm", "fma"]
    assert report["instructions"]["counted"]["zmm"] > 0
    assert report["instructions"]["counted"]["fma"] > 0


def test_machine_code_its_flags_do_not_enable_fails_the_smoke(tmp_path: Path) -> None:
    """The same wheel with a receipt whose plan enables no vector extension (its flags as they
    were): its zmm instructions are more than that build could have made (exit 7)."""
    if "AVX512F" not in cpu.guard_features(cpu.host_cpuinfo()):
        pytest.skip("the canary of the fixtures runs only where AVX-512 does")
    wheel = canary_copy(tmp_path / "dist", receipt=False)
    flags = ["-march=x86-64-v4", "-mtune=generic", "-mavx512vnni", "-mavx512bf16", "-mavxvnni"]
    receipts.write_receipt(wheel, target="x86_64", label=None, cflags=flags, standin=True)
    result = run_cli("smoke", str(wheel), "--no-bench", timeout=300)
    line = one_error_line(result, 7, among_others=True)
    assert "its library uses zmm and fma instructions its flags do not enable" in line
    assert "FAILED" in result.stdout


@pytest.mark.parametrize(
    ("name", "receipt", "standin"),
    [
        ("tfbuild_canary-0.0.0+tfbuild.canary.x86_64v3-py3-none-linux_x86_64.whl", False, True),
        ("tensorflow_cpu-0.0.0+tfbuild.canary.x86_64v3-py3-none-linux_x86_64.whl", False, True),
        ("tensorflow_cpu-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl", False, False),
        ("tensorflow_cpu-2.21.0+x86_64v3-cp311-cp311-linux_x86_64.whl", True, True),
    ],
)
def test_what_tells_a_stand_in(tmp_path: Path, name: str, receipt: bool, standin: bool) -> None:
    """Its name, the canary label of the canaries of before, or its receipt's ``standin``."""
    wheel = wheels.make_wheel(tmp_path, name)
    if receipt:
        receipts.write_receipt(wheel, target="x86_64_v3", label="x86_64v3", standin=True)
    assert is_standin_wheel(wheel) is standin
    assert not is_standin_wheel(tmp_path / "missing.whl")


def test_the_flags_and_the_machine_code_agree_or_the_smoke_says_where() -> None:
    assert expected_kinds(V4) == ("zmm", "fma")
    assert expected_kinds(("SSE3", "AVX", "AVX2", "FMA")) == ("ymm", "fma")
    assert expected_kinds(()) == ()
    v4 = "x86_64_v4 (-march=x86-64-v4)"
    assert instruction_failures({"zmm": 32, "ymm": 0, "fma": 6}, V4, v4) == []
    assert instruction_failures({"zmm": 0, "ymm": 57, "fma": 0}, V4, v4) == [
        "its library has no zmm and no fma instructions, which its flags enable (built for "
        "x86_64_v4 (-march=x86-64-v4)): the planned flags did not reach the compiler"
    ]
    assert instruction_failures({"zmm": 0, "ymm": 3, "fma": 0}, (), "x86_64 (-march=x86-64)") == [
        "its library uses ymm instructions its flags do not enable (built for x86_64 "
        "(-march=x86-64))"
    ]


FLAGS = ("-march=x86-64-v4", "-mtune=generic", "-mavx512vnni", "-mavx512bf16", "-mavxvnni")
REPORT = StandinSmoke(
    wheel="tfbuild_canary-0.0.0+tfbuild.canary.x86_64v4-py3-none-manylinux_2_34_x86_64.whl",
    module="tfbuild_canary",
    environment="/root/.cache/tfbuild/smoke-envs/aff2f689bd209ffd-py3.11",
    reused=False,
    ran=True,
    failure=None,
    checksum=1487.0086669921875,
    runtime=1000,
    flags=FLAGS,
    receipt_flags=FLAGS,
    target="x86_64_v4",
    instructions=Instructions(
        counted={"zmm": 32, "ymm": 0, "fma": 6},
        enabled=("zmm", "ymm", "fma"),
        expected=("zmm", "fma"),
    ),
    failures=(),
    seconds=2.812,
)


def test_the_reports_json_is_golden() -> None:
    compare_or_write(GOLDEN_DIR / "smoke" / "standin.json", json_text(serial.to_data(REPORT)))


def test_the_report_in_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfbuild.cli.wheel_display import print_standin_smoke

    monkeypatch.setenv("COLUMNS", "80")
    print_standin_smoke(REPORT, bench=True)
    assert capsys.readouterr().out.splitlines() == [
        REPORT.wheel,
        "STAND-IN: tfbuild's canary, not TensorFlow: tested as the stand-in it is",
        "runs: installs into a new environment, imports tfbuild_canary, its kernel ran",
        "      (sum 1487.01) and its C++ part (a thread, a libstdc++ string: 1000)",
        "flags: -march=x86-64-v4 -mtune=generic -mavx512vnni -mavx512bf16 -mavxvnni",
        "       (recorded in the wheel, as its receipt says; target x86_64_v4)",
        "machine code: 32 zmm, 0 ymm, 6 fma instructions: the zmm and fma its flags call",
        "              for",
        "no benchmark: a stand-in has no stock wheel to be compared with; tfbuild doctor",
        "              times the canary built for this machine against its x86_64 build",
        "PASSED in 2.8 s: the stand-in works (it proves the pipeline, not TensorFlow)",
    ]
    failed = StandinSmoke(
        **{
            **{f: getattr(REPORT, f) for f in REPORT.__dataclass_fields__ if f != "passed"},
            "ran": False,
            "failure": "died with SIGILL (Illegal instruction): the wheel uses instructions "
            "this CPU lacks",
            "failures": ("the stand-in does not work: died with SIGILL",),
        }
    )
    print_standin_smoke(failed, bench=False)
    out = capsys.readouterr().out
    assert "does NOT run: died with SIGILL" in out
    assert "FAILED: the stand-in does not work: died with SIGILL" in out
    assert all(len(line) <= 80 for line in out.splitlines())
