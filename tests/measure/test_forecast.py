"""tfbuild forecast, run for real: TensorFlow's own kernels compiled for the plan's target in the
overlay's toolchain image (the real engine, the recipe's clang), timed in the real stock TensorFlow
against stock's; a plan this machine cannot run, refused or written for its machine; and the
forecast's words, kept and shown beside smoke, from constructed timings.

No test here holds a ratio to a threshold (timings on a shared machine move): they hold the
structure, each interval to its ratio, each verdict to its interval, the summary to the verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cpuinfo_fixture, run_cli
from tests.docker.conftest import engine, new_base_image, old_base_image
from tests.measure.results import timed
from tests.overlays import foreign_target
from tfbuild.cli.forecast import print_forecast, print_forecast_beside
from tfbuild.core import serial
from tfbuild.core.stats import MEMORY_BOUND_MARGIN
from tfbuild.measure.forecast_report import (
    CLASSES,
    OP_CLASSES,
    Forecast,
    KernelsBuilt,
    OneDnn,
    OpForecast,
    by_class,
)
from tfbuild.measure.forecast_store import save_forecast, saved_forecast
from tfbuild.measure.run import OpResult
from tfbuild.overlay.prove import CONTROLS, LEFT_TO_STOCK, REPLACED
from tfbuild.smoke.session import forecast_beside

__all__ = ["engine", "new_base_image", "old_base_image"]  # the real-engine fixtures

#: The ops the forecast times: those whose kernels an overlay replaces, and the controls.
TIMED = {*REPLACED, *CONTROLS}


def _consistent(op: dict[str, Any]) -> None:
    """An op's interval holds its ratio, and its verdict is what the interval says. The report
    rounds both to 3 decimals (Round3), so each bound the verdict passed is compared rounded the
    same way: an interval from 1.0003 up, which says faster, reads 1.0 there."""
    low, high = op["interval"]
    assert low <= op["ratio"] <= high, op
    margin = MEMORY_BOUND_MARGIN  # every op timed here is element-wise: smoke's margin for them
    wider, narrower = round(1 + margin, 3), round(1 / (1 + margin), 3)
    if op["verdict"] == "faster":
        assert low >= 1 and op["ratio"] >= wider, op
    elif op["verdict"] == "slower":
        assert high <= 1 and op["ratio"] <= narrower, op
    elif op["verdict"] == "same" and not op["rechecked"]:  # a recheck can only undo a claim
        assert narrower <= low and high <= wider, op


def _summary_says(data: dict[str, Any]) -> None:
    """The summary speaks for the transcendental class, with its ops and its verdict's words."""
    (head,) = [c for c in data["classes"] if c["class"] == "transcendental"]
    assert data["summary"].startswith(f"a build for {data['target']} "), data["summary"]
    assert f"TensorFlow's transcendental ops ({', '.join(head['ops'])})" in data["summary"]
    words = {
        "faster": " faster here",
        "slower": "(a loss against stock)",
        "same": "no faster here (within the noise)",
        "undecided": "too noisy to tell",
    }
    if head["verdict"] in words:
        assert words[head["verdict"]] in data["summary"], data
    labels = {o["verdict"] for o in data["ops"] if o["class"] == "transcendental"}
    if "faster" not in labels:
        assert " faster here" not in data["summary"], data
    if "slower" in labels:
        assert "a loss against stock" in data["summary"] or "some faster" in data["summary"]


#: The forecast's kernels compiled on this host (the image's compile is the emit test's): its tests
#: then need no engine, and run beside the engine's tests rather than in their one queue.
ON_HOST = ("--compiler", "clang++-16")


@pytest.fixture(scope="module")
def forecast_here(stock_python: str) -> dict[str, Any]:
    """``tfbuild forecast --mkl --json`` for this host, once for the module."""
    result = run_cli("forecast", "--mkl", *ON_HOST, "--json", timeout=900)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = result.json()
    return data


@pytest.mark.slow
def test_the_forecast_times_each_op_with_the_targets_kernels_against_stocks(
    forecast_here: dict[str, Any],
) -> None:
    data = forecast_here
    assert data["schema"] == "tfbuild.forecast/2"
    assert data["stock_wheel"] == "tensorflow-cpu==2.21.0" and data["threads"] == 1
    assert {o["op"] for o in data["ops"]} == TIMED
    assert [c["class"] for c in data["classes"]] == list(CLASSES)
    for op in data["ops"]:
        _consistent(op)
        assert op["class"] == OP_CLASSES[op["op"]], op
        # both sides timed in pairs, one repetition beside the other's: as many on each
        assert op["stock"]["n"] == op["target"]["n"] >= 15, op
        assert op["stock"]["unit"] == op["target"]["unit"] == "Gelem/s", op
    for klass in data["classes"]:
        ops = [o for o in data["ops"] if o["class"] == klass["class"]]
        assert klass["ops"] == [o["op"] for o in ops]
        assert klass["ratio"] == [min(o["ratio"] for o in ops), max(o["ratio"] for o in ops)]
        assert klass["interval"] == [
            min(o["interval"][0] for o in ops),
            max(o["interval"][1] for o in ops),
        ]
        labels = {o["verdict"] for o in ops}
        assert klass["verdict"] == (labels.pop() if len(labels) == 1 else "mixed"), klass
    _summary_says(data)
    # What was timed is what tfbuild overlay --compiler clang++-16 builds for this host.
    built = data["built"]
    assert built["wheel"].startswith(f"tfbuild_overlay-2.21.0+{data['target'].replace('_', '')}")
    assert built["image"] is None, built
    assert "clang version 16" in built["compiler"] and built["kernels"] > 0, built
    assert len(built["sha256"]) == 64
    left = {entry.split(" ")[0] for entry in built["left_to_stock"]}
    assert left >= {"Log1p", "Softmax", "Cast"}, left  # log1p, softmax, cast_f32_f16: stock's
    assert any(", ".join(LEFT_TO_STOCK) in note for note in data["notes"]), data["notes"]
    # oneDNN's dispatch is read from the stock wheel on this machine, not assumed.
    onednn = data["onednn"]
    assert onednn["isa"] and set(onednn["kernels"]) == {"matmul", "conv"}, onednn
    assert onednn["forecast"] == "no change"
    assert data["summary"].endswith("matmul and conv would not change")
    assert data["machine"]["cpus"] >= 1
    # Kept for tfbuild smoke of a wheel built for that target.
    kept = saved_forecast(data["tensorflow"], f"{data['target']} (-march=...)")
    assert kept is not None and kept["summary"] == data["summary"]


@pytest.mark.slow
def test_a_target_below_stock_says_what_it_measured(stock_python: str) -> None:
    """x86_64 (SSE2) is below stock's -mavx: the summary says what its ops measured, a loss or
    nothing unless they came out faster, in the rows' words."""
    result = run_cli("forecast", "--target", "x86_64", *ON_HOST, "--budget", "15", timeout=900)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    blank = lines.index("")  # the summary first, wrapped under itself, then a blank line
    summary = " ".join(line.strip() for line in lines[:blank])
    assert all(line.startswith("  ") for line in lines[1:blank]), lines
    assert summary.startswith("a build for x86_64 "), summary
    assert lines[blank + 1].split() == ["op", "stock", "target", "ratio", "interval", "verdict"]
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("  ")}
    assert set(rows) >= TIMED
    transcendental = {rows[op][-1] for op in ("exp", "tanh", "sigmoid", "erf")}
    if "faster" not in transcendental:
        assert "faster" not in summary, summary
    if transcendental == {"slower"}:
        assert "(a loss against stock)" in summary, summary
    assert "[forecast] each op with the kernels for x86_64 against stock's" in result.stderr


def test_a_plan_for_another_machine_is_refused_without_emit() -> None:
    result = run_cli("forecast", "--cpuinfo", str(cpuinfo_fixture("haswell")))
    assert result.returncode == 4, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("tfbuild: error:")]
    assert len(errors) == 1
    assert "not this one" in errors[0] and "--emit DIR" in errors[0]
    assert result.stdout == ""


def test_a_target_beyond_this_cpu_is_refused_without_emit_before_anything_is_built() -> None:
    target, lacking = foreign_target()
    result = run_cli("forecast", "--target", target)
    assert result.returncode == 4, result.stderr
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("tfbuild: error:")]
    assert f"this CPU lacks {' '.join(sorted(lacking))} of {target}" in error, error
    assert "--emit DIR" in error
    assert "[forecast]" not in result.stderr  # nothing compiled, no environment made


def test_emit_for_a_plan_this_machine_runs_is_refused(tmp_path: Path) -> None:
    result = run_cli("forecast", "--target", "x86_64", "--emit", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert "--emit is for a plan this machine cannot run" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.docker
def test_emit_writes_the_overlay_and_a_runner_for_that_machine(
    engine: Any, new_base_image: str, old_base_image: str, stock_python: str, tmp_path: Path
) -> None:
    out = tmp_path / "haswell"
    fixture = cpuinfo_fixture("haswell")
    result = run_cli(
        "forecast", "--cpuinfo", str(fixture), "--emit", str(out), "--json", timeout=900
    )
    assert result.returncode == 0, result.stderr
    emitted = result.json()
    assert emitted["schema"] == "tfbuild.forecast-emit/2" and emitted["target"] == "haswell"
    assert emitted["why"] == f"the plan is for the machine of {fixture}, not this one"
    wheel = Path(emitted["wheel"])
    assert wheel.parent == out and wheel.name.startswith("tfbuild_overlay-2.21.0+haswell-")
    receipt = json.loads(wheel.with_name(wheel.name.removesuffix(".whl") + ".json").read_text())
    assert receipt["target"] == "haswell"
    # compiled as the command does by default: the recipe's clang in the overlay's image
    assert receipt["image"]["tag"].startswith("tfbuild/overlay-toolchain:"), receipt["image"]
    # This host runs haswell code: its special-value check ran here, nothing waits for it there.
    assert emitted["pending"] == [] and receipt["checks"], receipt["pending"]
    script = (out / "run.sh").read_text().splitlines()
    assert script[0] == "#!/bin/sh" and script[-1] == emitted["line"]
    assert emitted["line"].endswith(f'exec tfbuild smoke {wheel.name} "$@"')
    assert os.access(out / "run.sh", os.X_OK)
    # The runner, as that machine runs it (tfbuild on PATH): the overlay loads there.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    ran = run_cli_script(out / "run.sh", "--no-bench", "--json", env={"PATH": path})
    assert ran["loaded"] is True and ran["wheel"] == wheel.name, ran


def run_cli_script(script: Path, *args: str, env: dict[str, str]) -> dict[str, Any]:
    """``sh SCRIPT ARGS`` in a process of its own, its JSON output decoded."""
    done = subprocess.run(
        ["sh", str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


# --- the forecast's words, from constructed timings -----------------------------------------------

FAST = [1.0, 1.01, 0.99, 1.02, 0.98] * 3
SLOW = [3.0, 3.03, 2.97, 3.06, 2.94] * 3


def _result(op: str, target: list[float], stock: list[float]) -> OpResult:
    return timed(op, target, stock, work=262144, unit="Gelem/s")


def _forecast(target: str, results: list[OpResult]) -> Forecast:
    ops = tuple(o for o in (OpForecast.of(r) for r in results) if o is not None)
    return Forecast(
        tensorflow="2.21.0",
        target=target,
        stock_wheel="tensorflow-cpu==2.21.0",
        built=KernelsBuilt(
            wheel="tfbuild_overlay-2.21.0+haswell-py3-none-manylinux_2_31_x86_64.whl",
            sha256="0" * 64,
            kernels=83,
            compiler="clang version 18.1.8",
            image="tfbuild/overlay-toolchain:0123456789abcdef",
            cflags=("-march=haswell",),
            left_to_stock=("Log1p float32: why",),
            seconds=30.0,
        ),
        classes=by_class(ops),
        ops=ops,
        onednn=OneDnn(isa="AVX-512", kernels={"conv": ("brg_conv_fwd:avx512_core",)}),
        machine=None,
    )


def test_the_summary_says_a_loss_a_gain_or_nothing_as_the_verdicts_do() -> None:
    faster = _forecast("haswell", [_result("exp", FAST, SLOW), _result("tanh", FAST, SLOW)])
    assert faster.summary == (
        "a build for haswell would run TensorFlow's transcendental ops (exp, tanh) about 3.0x "
        "faster here; matmul and conv would not change"
    )
    slower = _forecast("x86_64", [_result("exp", SLOW, FAST), _result("tanh", SLOW, FAST)])
    assert "about 3.0x slower here (a loss against stock)" in slower.summary
    same = _forecast("x86_64_v2", [_result("exp", FAST, FAST), _result("add", FAST, SLOW)])
    assert "would run TensorFlow's transcendental ops (exp) no faster here" in same.summary
    assert "faster here" not in same.summary.replace("no faster here", "")
    mixed = _forecast("x86_64", [_result("exp", FAST, FAST), _result("tanh", SLOW, FAST)])
    (head, *_) = mixed.classes
    assert head.label == "mixed" and "slower here (1 of 2 ops beyond the noise" in mixed.summary
    nothing = _forecast("haswell", [_result("add", FAST, FAST)])
    assert nothing.summary.startswith("a build for haswell would change nothing measured here")
    unmeasured = Forecast(
        **{
            **{f: getattr(faster, f) for f in ("tensorflow", "target", "stock_wheel", "built")},
            "classes": faster.classes,
            "ops": faster.ops,
            "onednn": OneDnn(isa=None, kernels={}, error="no oneDNN"),
            "machine": None,
        }
    )
    assert unmeasured.summary.endswith("matmul and conv: oneDNN's dispatch was not measured")


def test_the_text_gives_each_class_its_range_and_verdict_then_its_ops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What ``tfbuild forecast`` prints (the slow tests run it whole, for a below-stock target)."""
    forecast = _forecast("haswell", [_result("exp", FAST, SLOW), _result("add", FAST, FAST)])
    print_forecast(forecast)
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("op "))
    assert header.split() == ["op", "stock", "target", "ratio", "interval", "verdict"]
    shown = " ".join(out.split())  # wherever the terminal's width wraps it
    assert ": 3.00-3.00x (interval 3.00-3.00), faster exp 0.00 0.00 3.00x 3.00-3.00 faster" in shown
    assert ": 1.00-1.00x (interval 1.00-1.00), same add 0.00 0.00 1.00x 1.00-1.00 same" in shown


def test_an_op_without_a_baseline_is_left_out() -> None:
    alone = OpResult(
        op="exp",
        threads="1",
        candidate=_result("exp", FAST, SLOW).candidate,
        baseline=None,
        verdict=None,
    )
    assert OpForecast.of(alone) is None
    assert set(OP_CLASSES) == TIMED  # every op timed has its class, and only those


def test_smoke_shows_the_kept_forecast_beside_what_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TFBUILD_CACHE_DIR", str(tmp_path))
    forecast = _forecast("haswell", [_result("exp", FAST, SLOW), _result("reduce_sum", FAST, FAST)])
    kept = save_forecast(forecast)
    assert kept == tmp_path / "forecasts/tf-2.21.0-haswell.json"

    def measured(op: str, ratio: float, threads: str = "1") -> OpResult:
        result = _result(op, FAST, [s * ratio for s in FAST])
        return OpResult(
            op=op,
            threads=threads,
            candidate=result.candidate,
            baseline=result.baseline,
            verdict=result.verdict,
        )

    results = (measured("exp", 2.5), measured("exp", 9.0, "default"), measured("relu", 1.1))
    beside = forecast_beside("2.21.0+haswell", "haswell (-march=haswell)", results)
    assert beside is not None and beside["file"] == str(kept)
    assert beside["schema"] == "tfbuild.forecast/2"
    rows = {row["class"]: row for row in beside["classes"]}
    assert rows["transcendental"] == {
        "class": "transcendental",
        "ops": ["exp"],
        "forecast": [3.0, 3.0],
        "measured": [2.5, 2.5],  # the one-thread ratio only
    }
    assert rows["control"]["ops"] == [] and rows["control"]["measured"] is None
    print_forecast_beside(beside)
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines() if " " in line.strip()), out
    shown = " ".join(out.split())  # what it says, wherever the terminal's width wraps it
    assert (
        "transcendental element-wise ops: forecast 3.00-3.00x, measured 2.50-2.50x (exp)" in shown
    )
    assert "controls (memory-bound, should not change): forecast 1.00-1.00x, not measured" in shown
    assert forecast_beside("2.21.0", "zen4 (-march=znver4)", results) is None
    assert forecast_beside("2.20.0", "haswell (-march=haswell)", results) is None
    # A forecast kept by an older tfbuild (tfbuild.forecast/1) is not read as this one.
    data = serial.to_data(forecast) | {"schema": "tfbuild.forecast/1"}
    kept.write_text(json.dumps(data), encoding="utf-8")
    assert forecast_beside("2.21.0", "haswell (-march=haswell)", results) is None
