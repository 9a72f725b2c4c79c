"""The forecast's and tune's JSON byte for byte, from fixed constructed values (no timing run).

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tests.measure.results import timed
from tfbuild.core import serial
from tfbuild.measure.forecast_emit import Emitted
from tfbuild.measure.forecast_report import (
    CompilerUsed,
    Forecast,
    OneDnn,
    OpForecast,
    StockFlags,
    compare,
)
from tfbuild.measure.run import OpResult, SettingTrial
from tfbuild.measure.tune import TuneReport

GOLDEN = GOLDEN_DIR / "measure"

FAST = [1.0, 1.01, 0.99, 1.02, 0.98] * 3
SLOW = [3.0, 3.03, 2.97, 3.06, 2.94] * 3
EVEN = [2.0, 2.02, 1.98, 2.04, 1.96] * 3


#: Stock TensorFlow's own op: the slow kernel plus 1 s a call around it.
TF = [s + 1.0 for s in SLOW]


def _forecast(onednn: OneDnn) -> Forecast:
    ops = (
        OpForecast.of("exp", "transcendental", 1000, stock=SLOW, plan=FAST, tensorflow=TF),
        OpForecast.of("tanh", "transcendental", 1000, stock=EVEN, plan=FAST, tensorflow=TF),
        OpForecast.of("cast_f32_bf16", "cast", 4096, stock=FAST, plan=FAST, tensorflow=FAST),
        OpForecast.of("add", "control", 1000, stock=FAST, plan=FAST, tensorflow=EVEN),
        # Not timed in TensorFlow: its class shows the kernel's ratios.
        OpForecast.of("relu", "control", 1000, stock=FAST, plan=SLOW),
    )
    return Forecast(
        tensorflow="2.21.0",
        target="haswell",
        stock_wheel="tensorflow-cpu==2.21.0",
        compiler=CompilerUsed(version="g++ 12.2.0", why="the newest g++ on PATH"),
        stock_flags=StockFlags(flags=("-mavx",), source="TensorFlow 2.21's .bazelrc"),
        plan_flags=("-march=haswell", "-O2"),
        ops=ops,
        classes=compare(ops),
        onednn=onednn,
        notes=("a note",),
    )


def test_a_forecast() -> None:
    measured = OneDnn(
        isa="Intel AVX2",
        kernels={"conv": ("brg_conv_fwd:avx2",), "matmul": ("brg:avx2", "gemm:jit")},
    )
    compare_or_write(GOLDEN / "forecast.json", json_text(serial.to_data(_forecast(measured))))
    compare_or_write(
        GOLDEN / "forecast-unmeasured.json",
        json_text(serial.to_data(_forecast(OneDnn(isa=None, kernels={}, error="no oneDNN")))),
    )


def test_an_emitted_forecast() -> None:
    emitted = Emitted(
        directory="/tmp/bench",
        script="/tmp/bench/run.sh",
        line="cd x && ./stock 5",
        compiled_here_with="g++ 12.2.0",
        stock_flags=("-mavx",),
        plan_flags=("-march=icelake-server",),
        notes=(),
    )
    compare_or_write(GOLDEN / "forecast-emit.json", json_text(serial.to_data(emitted)))


def _op(op: str, candidate: list[float], baseline: list[float]) -> OpResult:
    return timed(op, candidate, baseline, work=1000, unit="Gelem/s")


def _trial(name: str, env: tuple[tuple[str, str], ...], baseline: list[float]) -> SettingTrial:
    return SettingTrial(
        name=name,
        env=env,
        intra=0,
        inter=0,
        results=(
            _op("exp", FAST, baseline),
            _op("add", FAST, baseline),
            _op("softmax", FAST, EVEN),
        ),
    )


def test_a_tune_report() -> None:
    threads = _trial("threads intra=4 inter=1", (("TF_NUM_INTRAOP_THREADS", "4"),), SLOW)
    onednn = _trial("oneDNN off", (("TF_ENABLE_ONEDNN_OPTS", "0"),), FAST)
    report = TuneReport(
        wheel="tensorflow-cpu==2.21.0",
        tried=(threads, onednn),
        not_tried=("jemalloc preloaded",),
        confirmation=_trial("threads intra=4 inter=1", threads.env, EVEN),
        seconds=123.456,
    )
    compare_or_write(GOLDEN / "tune.json", json_text(report.to_json()))
    bare = TuneReport(wheel="w", tried=(onednn,), not_tried=(), confirmation=None, seconds=1.04)
    compare_or_write(GOLDEN / "tune-bare.json", json_text(bare.to_json()))
