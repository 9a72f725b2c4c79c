"""tfbuild forecast, run for real on the stock wheel's Eigen headers, and its refusals."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cpuinfo_fixture, run_cli
from tests.wheels import make_wheel
from tfbuild.cli.forecast import print_forecast_beside
from tfbuild.core import serial
from tfbuild.core.errors import InputError
from tfbuild.core.stats import Summary, verdict
from tfbuild.measure.eigen_headers import copy_eigen
from tfbuild.measure.envs import tensorflow_dir
from tfbuild.measure.forecast_report import (
    CompilerUsed,
    Forecast,
    OneDnn,
    OpForecast,
    StockFlags,
    beside,
    compare,
    tensorflow_ratio,
)
from tfbuild.measure.forecast_store import save_forecast, saved_forecast
from tfbuild.measure.forecast_tensorflow import tensorflow_times
from tfbuild.measure.run import OpResult
from tfbuild.smoke.session import forecast_beside

OPS = {
    "exp", "tanh", "sigmoid", "erf", "log1p",
    "cast_f32_bf16", "cast_f32_f16", "cast_bf16_f32",
    "log_softmax", "layer_norm",
    "add", "relu", "sum",
}  # fmt: skip
HAS_CXX = any(shutil.which(c) for c in ("clang++", "g++", "c++"))
needs_cxx = pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler on this machine")


@pytest.mark.slow
@needs_cxx
def test_the_forecast_for_this_host_measures_every_op_class(stock_python: str) -> None:
    result = run_cli("forecast", "--json", timeout=600)
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["schema"] == "tfbuild.forecast/1"
    (head,) = [c for c in data["classes"] if c["class"] == "transcendental"]
    assert data["summary"].startswith(
        f"a build for {data['target']} would run TensorFlow's transcendental ops "
        f"({', '.join(head['ops'])}) "
    ), data["summary"]
    assert "element-wise ops" not in data["summary"]  # it speaks for one class, and says which
    assert {o["op"] for o in data["ops"]} == OPS
    assert [c["class"] for c in data["classes"]] == [
        "transcendental",
        "cast",
        "composite",
        "control",
    ]
    for op in data["ops"]:
        low, high = op["interval"]
        assert low <= op["ratio"] <= high or op["verdict"] == "same", op
        # four rounds of five, and one more round at a time while the op is undecided
        assert op["stock"]["n"] == op["plan"]["n"] in (20, 25, 30, 35, 40), op
        # Stock TensorFlow's own op, timed on the same tensors, and the kernel's saving carried
        # over to it: T / (T - D); its interval a bootstrap over T's noise and the kernels'.
        tf = op["tensorflow"]
        assert tf["seconds"] > 0 and tf["n"] == 20 and tf["throughput"] > 0, op
        kernel_s = op["stock"]["seconds"]["median"]

        def at_tf(r: float, t: float = tf["seconds"], s: float = kernel_s) -> float:
            return tensorflow_ratio(r, stock_kernel=s, tensorflow=t)

        medians = op["stock"]["seconds"]["median"] / op["plan"]["seconds"]["median"]
        assert tf["ratio"] == pytest.approx(at_tf(medians), abs=2e-3), op
        tf_low, tf_high = tf["interval"]
        assert tf_low <= tf["ratio"] <= tf_high or tf["verdict"] == "same", op
        # TensorFlow pays more than the bare kernel, so it shows less of a kernel speed-up (of
        # the medians' ratio, which T / (T - D) carries over; the kernel's own ratio is the pairs')
        # (kept to three places, a saving small beside T rounds to a ratio of 1.000)
        if medians > 1.001:
            assert 1 <= tf["ratio"] <= round(medians, 3) or tf["clamped"], op
        if op["verdict"] == "same":
            assert tf["verdict"] == "same", op
    for klass in data["classes"]:
        assert klass["level"] == "tensorflow", klass
        assert set(klass["kernel"]) == {"ratio", "interval", "verdict"}, klass
        ops = [o for o in data["ops"] if o["class"] == klass["class"]]
        assert klass["ratio"] == [
            min(o["tensorflow"]["ratio"] for o in ops),
            max(o["tensorflow"]["ratio"] for o in ops),
        ]
        assert klass["kernel"]["ratio"] == [
            min(o["ratio"] for o in ops),
            max(o["ratio"] for o in ops),
        ]
    assert "the Eigen kernel alone: " in data["summary"], data["summary"]
    # The release's -mavx, and F16C, which the stock wheel's own half casts are compiled to.
    assert data["stock_flags"]["flags"] == ["-mavx", "-mf16c"]
    assert "avx_linux" in data["stock_flags"]["source"]
    assert "vcvtps2ph" in data["stock_flags"]["source"]
    # oneDNN's dispatch is read from the stock wheel on this machine, not assumed.
    onednn = data["onednn"]
    assert onednn["isa"], onednn
    assert set(onednn["kernels"]) == {"matmul", "conv"}, onednn
    assert onednn["forecast"] == "no change"
    assert data["summary"].endswith("matmul and conv would not change")
    # Kept for tfbuild smoke of a wheel built for that target.
    kept = saved_forecast(data["tensorflow"], f"{data['target']} ({' '.join(data['plan_flags'])})")
    assert kept is not None and kept["summary"] == data["summary"]


@pytest.mark.slow
@needs_cxx
def test_a_target_below_stock_forecasts_a_loss_or_nothing(stock_python: str) -> None:
    result = run_cli("forecast", "--target", "x86_64", timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    blank = lines.index("")  # the summary first, wrapped under itself, then a blank line
    summary = " ".join(line.strip() for line in lines[:blank])
    assert all(line.startswith("  ") for line in lines[1:blank]), lines
    # The headline names the class it speaks for, and its ops (the casts, row ops and controls
    # have rows of their own).
    assert summary.startswith(
        "a build for x86_64 would run TensorFlow's transcendental ops (exp, tanh, sigmoid, erf, "
        "log1p)"
    ), summary
    assert "faster" not in summary, summary
    assert lines[blank + 1].split()[:2] == ["op", "stock"]
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("  ")}
    assert set(rows) >= OPS
    # SSE2 against AVX on the same Eigen code: never a gain beyond the noise.
    assert all(rows[op][-1] != "faster" for op in ("exp", "tanh", "sigmoid", "erf")), rows
    assert "[forecast] timing round 1 (stock and plan builds, alternating)" in result.stderr
    assert "[forecast] timing the same ops in the stock wheel's TensorFlow" in result.stderr
    assert "Eigen kernel alone" in summary, summary


def test_a_plan_for_another_machine_is_refused_without_emit() -> None:
    result = run_cli("forecast", "--cpuinfo", str(cpuinfo_fixture("haswell")))
    assert result.returncode == 4, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("tfbuild: error:")]
    assert len(errors) == 1
    assert "not this one" in errors[0] and "--emit DIR" in errors[0]
    assert result.stdout == ""


def test_emit_without_a_plan_for_another_machine_is_refused() -> None:
    result = run_cli("forecast", "--emit", "/nonexistent/forecast")
    assert result.returncode == 2, result.stderr
    assert "--emit is for a plan for another machine" in result.stderr


@pytest.mark.slow
@needs_cxx
def test_emit_writes_a_benchmark_that_runs_with_a_compiler_alone(
    stock_python: str, tmp_path: Path
) -> None:
    out = tmp_path / "haswell"
    result = run_cli(
        "forecast", "--cpuinfo", str(cpuinfo_fixture("haswell")), "--emit", str(out),
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "runs only there" in result.stdout and f"sh {out}/run.sh" in result.stdout
    script = (out / "run.sh").read_text().splitlines()
    assert script[0] == "#!/bin/sh" and len(script) == 2
    assert "-march=haswell" in script[1] and "-mavx " in script[1]
    assert (out / "include/unsupported/Eigen/CXX11/Tensor").is_file()
    # This host runs haswell code: the emitted line, as that machine would run it.
    ran = subprocess.run(
        ["sh", str(out / "run.sh")], capture_output=True, text=True, timeout=600, check=False
    )
    assert ran.returncode == 0, ran.stderr
    sides = [line.split("\t")[:2] for line in ran.stdout.splitlines()]
    assert sides.count(["stock", "exp"]) == sides.count(["plan", "exp"]) == 4
    # No TensorFlow there, necessarily: the numbers are the kernels', and both texts say so.
    assert "these are the Eigen kernels alone" in ran.stderr
    assert "TensorFlow's own ops gain less" in (out / "README.txt").read_text()
    assert "these are the Eigen kernels alone" in result.stdout


def test_no_cpp_compiler_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_cli("forecast", env={"PATH": str(empty)})
    assert result.returncode == 5, result.stderr
    assert "tfbuild: error: no C++ compiler on this host" in result.stderr


def _wheel_without_headers(where: Path) -> Path:
    """A real, installable tensorflow wheel that ships no include directory."""
    return make_wheel(where, "tensorflow-0.0.1-py3-none-any.whl", module_text="")


@needs_cxx
def test_a_wheel_without_eigen_headers_is_refused(tmp_path: Path) -> None:
    wheel = _wheel_without_headers(tmp_path)
    result = run_cli(
        "forecast", "--stock", str(wheel), env={"TFBUILD_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "tensorflow-0.0.1-py3-none-any.whl has no Eigen headers" in result.stderr


def test_a_header_that_is_a_link_is_refused(stock_python: str, tmp_path: Path) -> None:
    tf_dir = tensorflow_dir(stock_python)
    assert tf_dir is not None
    include = tmp_path / "include"
    shutil.copytree(tf_dir / "include" / "Eigen", include / "Eigen")
    shutil.copytree(tf_dir / "include" / "unsupported", include / "unsupported")
    (include / "Eigen" / "Core").unlink()
    (include / "Eigen" / "Core").symlink_to("/etc/passwd")
    with pytest.raises(InputError, match="not a plain file: Eigen/Core"):
        copy_eigen(include, tmp_path / "copy", label="the wheel")


def test_the_class_verdict_is_mixed_only_when_its_ops_disagree() -> None:
    fast = [1.0, 1.01, 0.99, 1.02, 0.98] * 2
    slow = [3.0, 3.03, 2.97, 3.06, 2.94] * 2
    ops = [
        OpForecast.of("exp", "transcendental", 1000, stock=slow, plan=fast),
        OpForecast.of("tanh", "transcendental", 1000, stock=slow, plan=fast),
        OpForecast.of("add", "control", 1000, stock=fast, plan=fast),
        OpForecast.of("relu", "control", 1000, stock=slow, plan=fast),
    ]
    transcendental, control = compare(ops)
    assert transcendental.label == "faster"
    assert 2.9 < transcendental.low <= transcendental.high < 3.1
    assert transcendental.interval[0] <= transcendental.low
    assert control.label == "mixed"


def test_the_tensorflow_level_ratio_is_the_kernel_saving_over_tensorflow_time() -> None:
    # A kernel that takes 1.0 s in the stock build and 0.5 s in the plan's saves 0.5 s a call;
    # a TensorFlow op that takes 2.0 s would take 1.5 s: 1.333x, not the kernel's 2x.
    assert tensorflow_ratio(2.0, stock_kernel=1.0, tensorflow=2.0) == pytest.approx(2.0 / 1.5)
    assert tensorflow_ratio(1.0, stock_kernel=1.0, tensorflow=2.0) == 1.0
    # A kernel loss shrinks too: 1.0 s -> 1.25 s (0.8x) is 2.0 s -> 2.25 s in TensorFlow.
    assert tensorflow_ratio(0.8, stock_kernel=1.0, tensorflow=2.0) == pytest.approx(2.0 / 2.25)
    # Increasing in the kernel ratio, so an interval's ends map to the interval's ends.
    ends = [tensorflow_ratio(r, stock_kernel=1.0, tensorflow=3.0) for r in (0.5, 1.5, 3.0, 50.0)]
    assert ends == sorted(ends) and ends[-1] < 3.0 / (3.0 - 1.0)
    # TensorFlow faster than the stock kernel: taken as the kernel's time, so never more than r
    # and never T - D <= 0.
    assert tensorflow_ratio(4.0, stock_kernel=1.0, tensorflow=0.5) == pytest.approx(4.0)


def test_an_op_timed_in_tensorflow_gets_the_shifted_verdict_and_interval() -> None:
    fast = [1.0, 1.01, 0.99, 1.02, 0.98] * 2
    slow = [3.0, 3.03, 2.97, 3.06, 2.94] * 2
    tf = [x + 7.0 for x in slow]  # stock TensorFlow: the kernel plus 7 s around it
    op = OpForecast.of("exp", "transcendental", 1000, stock=slow, plan=fast, tensorflow=tf)
    assert op.ratio == pytest.approx(3.0) and op.tensorflow is not None
    assert op.tensorflow.ratio == pytest.approx(10.0 / 8.0)
    assert op.tensorflow.label == "faster" and not op.tensorflow.clamped
    low, high = op.tensorflow.interval
    assert low < op.tensorflow.ratio < high
    # Without noise in T the interval is the kernel interval's ends through T / (T - D); noise in T
    # (timed at another moment) widens it.
    steady = [10.0] * len(slow)
    quiet = OpForecast.of("exp", "transcendental", 1000, stock=slow, plan=fast, tensorflow=steady)
    assert quiet.tensorflow is not None
    q_low, q_high = quiet.tensorflow.interval
    assert q_low == pytest.approx(tensorflow_ratio(op.low, stock_kernel=3.0, tensorflow=10.0), 1e-2)
    assert q_high == pytest.approx(
        tensorflow_ratio(op.high, stock_kernel=3.0, tensorflow=10.0), 1e-2
    )
    noisy = [t * f for t, f in zip(steady, (0.8, 1.2) * 5, strict=True)]
    wide = OpForecast.of("exp", "transcendental", 1000, stock=slow, plan=fast, tensorflow=noisy)
    assert wide.tensorflow is not None
    assert wide.tensorflow.interval[0] < q_low and wide.tensorflow.interval[1] > q_high
    # A kernel gain of 3 % amid ±2 % noise in ten values each cannot rule out 5 %: undecided;
    # over a TensorFlow op ten times longer, it is within the margin there: the same.
    near = [x * 0.97 for x in slow]
    small = OpForecast.of("tanh", "transcendental", 1000, stock=slow, plan=near, tensorflow=tf)
    assert small.label == "undecided" and small.tensorflow is not None
    assert small.high > 1.05
    assert small.tensorflow.label == "same"
    clamped = OpForecast.of("erf", "transcendental", 1000, stock=slow, plan=fast, tensorflow=fast)
    assert clamped.tensorflow is not None and clamped.tensorflow.clamped
    assert clamped.tensorflow.ratio == pytest.approx(clamped.ratio)


def _forecast(target: str) -> Forecast:
    fast = [1.0, 1.01, 0.99, 1.02, 0.98] * 2
    slow = [3.0, 3.03, 2.97, 3.06, 2.94] * 2
    tf_exp = [x + 1.0 for x in slow]  # 4 s a call in TensorFlow, 2 s after the kernel's saving
    ops = (
        OpForecast.of("exp", "transcendental", 1000, stock=slow, plan=fast, tensorflow=tf_exp),
        OpForecast.of("sum", "control", 1000, stock=fast, plan=fast),
        OpForecast.of("relu", "control", 1000, stock=fast, plan=fast),
    )
    return Forecast(
        tensorflow="2.21.0",
        target=target,
        stock_wheel="tensorflow-cpu==2.21.0",
        compiler=CompilerUsed(version="g++", why="test"),
        stock_flags=StockFlags(flags=("-mavx",), source="test"),
        plan_flags=("-march=haswell",),
        ops=ops,
        classes=compare(ops),
        onednn=OneDnn(isa="AVX-512", kernels={"conv": ("brg_conv_fwd:avx512_core",)}),
    )


def test_smoke_shows_the_kept_forecast_beside_what_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TFBUILD_CACHE_DIR", str(tmp_path))
    kept = save_forecast(_forecast("haswell"))
    assert kept == tmp_path / "forecasts/tf-2.21.0-haswell.json"
    one = [0.01] * 10

    def result(op: str, ratio: float, threads: str = "1") -> OpResult:
        base = [s * ratio for s in one]
        return OpResult(
            op=op,
            threads=threads,
            candidate=Summary.of(one, 1, "Gelem/s"),
            baseline=Summary.of(base, 1, "Gelem/s"),
            verdict=verdict(one, base, paired=True),
        )

    results = (result("exp", 2.5), result("exp", 9.0, "default"), result("reduce_sum", 1.1))
    beside = forecast_beside("2.21.0+haswell", "haswell (-march=haswell)", results)
    assert beside is not None and beside["file"] == str(kept)
    rows = {row["class"]: row for row in beside["classes"]}
    # What TensorFlow would show (4 s -> 2 s), the kernel alone beside it.
    assert rows["transcendental"]["level"] == "tensorflow"
    assert rows["transcendental"]["forecast"] == [2.0, 2.0]
    assert rows["transcendental"]["kernel"] == [3.0, 3.0]
    assert rows["transcendental"]["measured"] == [2.5, 2.5]  # the one-thread ratio only
    assert rows["control"]["ops"] == ["sum"] and rows["control"]["measured"] == [1.1, 1.1]
    assert rows["control"]["level"] == "kernel"  # stock TensorFlow did not time these two
    print_forecast_beside(beside)
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines() if " " in line.strip()), out
    shown = " ".join(out.split())  # what it says, wherever the terminal's width wraps it
    assert "forecast 2.00-2.00x (Eigen kernel alone 3.00-3.00x), measured 2.50-2.50x" in shown
    assert forecast_beside("2.21.0", "zen4 (-march=znver4)", results) is None
    assert forecast_beside("2.20.0", "haswell (-march=haswell)", results) is None


def test_a_forecast_kept_before_tensorflow_was_timed_is_shown_at_the_kernel_level() -> None:
    kept = serial.to_data(_forecast("haswell"))
    for op in kept["ops"]:
        del op["tensorflow"]  # as forecasts kept before the TensorFlow-level ratios read
    rows = {row.klass: row for row in beside(kept, {"exp": 2.5})}
    assert rows["transcendental"].level == "kernel"
    assert rows["transcendental"].forecast == rows["transcendental"].kernel == (3.0, 3.0)


def test_a_python_without_tensorflow_gives_why_stock_tensorflow_was_not_timed() -> None:
    # tfbuild's own interpreter has no TensorFlow: the timer says so in one line, no traceback.
    why = tensorflow_times(sys.executable, reps=2)
    assert isinstance(why, str) and why.startswith("it failed: ModuleNotFoundError"), why
    assert "\n" not in why
