"""The forecast's and tune's JSON byte for byte, from fixed constructed values (no timing run).

Regenerate after an intended change with TFBUILD_UPDATE_GOLDEN=1 (then read the diff).
"""

from __future__ import annotations

from tests.goldens import GOLDEN_DIR, compare_or_write, json_text
from tests.measure.results import timed
from tfbuild.core import serial
from tfbuild.detect.contention import Contention
from tfbuild.measure.forecast_report import (
    Forecast,
    KernelsBuilt,
    OneDnn,
    OpForecast,
    by_class,
)
from tfbuild.measure.run import OpResult, SettingTrial
from tfbuild.measure.tune import TuneReport
from tfbuild.overlay.forecast import Emitted

GOLDEN = GOLDEN_DIR / "measure"

FAST = [1.0, 1.01, 0.99, 1.02, 0.98] * 3
SLOW = [3.0, 3.03, 2.97, 3.06, 2.94] * 3
EVEN = [2.0, 2.02, 1.98, 2.04, 1.96] * 3


def _forecast(onednn: OneDnn) -> Forecast:
    results = (
        timed("exp", FAST, SLOW, work=1000, unit="Gelem/s"),
        timed("tanh", FAST, EVEN, work=1000, unit="Gelem/s"),
        timed("gelu", EVEN, EVEN, work=1000, unit="Gelem/s"),
        timed("cast_f32_bf16", FAST, FAST, work=4096, unit="Gelem/s"),
        timed("add", FAST, FAST, work=1000, unit="Gelem/s"),
        timed("relu", SLOW, FAST, work=1000, unit="Gelem/s"),
    )
    ops = tuple(op for op in (OpForecast.of(r) for r in results) if op is not None)
    return Forecast(
        tensorflow="2.21.0",
        target="haswell",
        stock_wheel="tensorflow-cpu==2.21.0",
        built=KernelsBuilt(
            wheel="tfbuild_overlay-2.21.0+haswell-py3-none-manylinux_2_31_x86_64.whl",
            sha256="ab" * 32,
            kernels=83,
            compiler="Debian clang version 18.1.8 (18+b1)",
            image="tfbuild/overlay-toolchain:73af2bb34425b6b4",
            cflags=("-march=haswell", "-mno-rdrnd"),
            left_to_stock=("Log1p float32: why", "Softmax float32: not faster"),
            seconds=31.5,
        ),
        classes=by_class(ops),
        ops=ops,
        onednn=onednn,
        machine=Contention(
            seconds=40.0,
            cpus=2,
            others_busy=0.25,
            ours_busy=1.0,
            steal=0.0,
            load_average=1.5,
            quota_cores=None,
            throttled=None,
        ),
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
        tensorflow="2.21.0",
        target="zen4",
        why="the plan is for the machine of zen4.txt, not this one",
        directory="/tmp/zen4",
        wheel="/tmp/zen4/tfbuild_overlay-2.21.0+zen4-py3-none-manylinux_2_31_x86_64.whl",
        script="/tmp/zen4/run.sh",
        line='cd "$(dirname "$0")" && exec tfbuild smoke '
        'tfbuild_overlay-2.21.0+zen4-py3-none-manylinux_2_31_x86_64.whl "$@"',
        pending=("sse4a",),
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
