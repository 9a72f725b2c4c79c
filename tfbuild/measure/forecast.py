"""What a build would gain over the stock wheel here, measured before anything is built.

``tfbuild forecast`` compiles one small benchmark (``forecast_kernels.cc``: the Eigen expressions of
TensorFlow's element-wise, cast and softmax kernels) against the Eigen headers the stock wheel itself
ships, twice: with the stock release's flags and with the plan's. Timed in alternation on one
thread, the ratio of the two is what the plan's flags change in TensorFlow's statically compiled
Eigen code (the stock-wheel baseline: ``-mavx`` exp 2.2 Gelem/s against stock TensorFlow's own
1.8-2.0). matmul and conv run oneDNN's JIT kernels, chosen at run time: which ones is read from
oneDNN's verbose output in the stock wheel, so no gain is forecast there.

TensorFlow's own op pays for more than the kernel (dispatch, the output's allocation and first
touch), the same whatever the flags, so it gains less than the bare kernel does: the forecast also
times each op in the stock wheel's TensorFlow (``_forecast_tf.py``, on the same tensors) and carries
the kernel's saving over to it (:func:`tfbuild.measure.forecast_report.tensorflow_ratio`).

Here: the forecast's request and its run, from the stock release's flags to the result. Each step
is a module of its own: the compiler (:mod:`tfbuild.core.compilers`), the stock wheel's headers
(:mod:`tfbuild.measure.eigen_headers`), compiling and timing the benchmark
(:mod:`tfbuild.measure.forecast_bench`), stock TensorFlow's own ops
(:mod:`tfbuild.measure.forecast_tensorflow`), oneDNN's kernels (:mod:`tfbuild.measure.forecast_onednn`).
The benchmark for another machine is :mod:`tfbuild.measure.forecast_emit`'s, the forecasts kept for
``tfbuild smoke`` :mod:`tfbuild.measure.forecast_store`'s; the results, the summary and the JSON are
:mod:`tfbuild.measure.forecast_report`'s.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.compilers import CompilerExecutable, find_compiler
from tfbuild.core.errors import InputError, UnsupportedError
from tfbuild.measure.eigen_headers import copy_eigen
from tfbuild.measure.envs import TestEnv, WheelSpec, ensure_env, stock_spec, tensorflow_dir
from tfbuild.measure.forecast_bench import (
    KERNELS,
    compile_both,
    kernels_source,
    measure_until_decided,
)
from tfbuild.measure.forecast_onednn import onednn_dispatch
from tfbuild.measure.forecast_report import (
    CompilerUsed,
    Forecast,
    OpForecast,
    StockFlags,
    compare,
)
from tfbuild.measure.forecast_tensorflow import TensorFlowTimes, tensorflow_times
from tfbuild.recipes.recipe import Recipe

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class ForecastRequest:
    """The plan's facts a forecast needs (the CLI reads them from the plan: smoke never plans)."""

    tensorflow: str
    architecture: str
    target: str  # the plan's target name ("zen4", "x86_64_v2", "native")
    cflags: tuple[str, ...]  # the plan's target flags
    compiler: str  # the plan's compiler ("clang-18.1.8")
    elsewhere: str | None = None  # the other machine a --cpuinfo plan is for; None: this host
    stock: str | None = None  # the stock wheel: a .whl or a requirement (default: the index's)
    python: str = sys.executable
    rounds: int = 4  # alternations of the two builds before the first look
    reps: int = 5  # timed repetitions of each op per run
    budget: float = 120.0  # seconds the timing may take: undecided ops get more rounds meanwhile


#: The stock wheel's f32 -> f16 cast is F16C code although its flags say -mavx only: its hot loop is
#: ``vcvtps2ph %ymm`` (perf annotate of stock 2.21's tf.cast, and 20 F16C instructions in its
#: binaries: the stock-wheel baseline, section 4), and stock TensorFlow casts f32 -> f16 about 2.5x
#: faster than Eigen's -mavx code (benchmarks/forecast.py). F16C changes no other Eigen code.
STOCK_F16C = "-mf16c"


def stock_flags(recipe: Recipe) -> StockFlags:
    """The stock release's target flags, from the recipe's configs.

    TensorFlow's ``.bazelrc`` defines ``build:avx_linux --copt=-mavx --host_copt=-mavx``, and its
    ``release_cpu_linux`` config, the one the official x86 wheels are built with, includes
    ``avx_linux`` (docs/toolchain-facts.md E10, E12; the SIG-build ``cpu.bazelrc`` passes
    ``--copt=-mavx`` itself). A recipe lists the configs its release defines. Plus
    :data:`STOCK_F16C`: what the stock wheel's own half casts are compiled to."""
    if "avx_linux" not in recipe.configs:
        raise UnsupportedError(
            f"the recipe of TensorFlow {recipe.tensorflow} does not say how its stock wheels "
            "were compiled",
            why=f"its configs ({recipe.where('configs')}) have no avx_linux, the config of the "
            "official x86 wheels",
            fix="Forecast a release whose recipe names avx_linux (an x86 release).",
        )
    return StockFlags(
        flags=("-mavx", STOCK_F16C),
        source=f"{recipe.where('configs')} names avx_linux, which TensorFlow's .bazelrc defines "
        "as --copt=-mavx and which release_cpu_linux, the official wheels' config, includes "
        "(docs/toolchain-facts.md E10, E12); -mf16c because the stock wheel's f32->f16 cast is "
        "F16C code (vcvtps2ph), measured in its binary",
    )


@dataclass(frozen=True, kw_only=True)
class StockSide:
    """What a forecast and an emitted benchmark both start from: the stock release's flags, the
    compiler, the stock wheel, its environment (made once) and that environment's tensorflow."""

    release_flags: StockFlags
    compiler: CompilerExecutable
    wheel: WheelSpec
    env: TestEnv
    tensorflow: Path  # the environment's tensorflow package directory


def prepare_stock(request: ForecastRequest, recipe: Recipe, *, progress: Progress) -> StockSide:
    """The stock side of ``request``. What refuses it, the recipe naming no stock flags or no C++
    compiler here, is found before the stock wheel's environment is made (the slow part)."""
    release_flags = stock_flags(recipe)
    compiler = find_compiler(
        request.compiler, needed_for="the forecast compiles a small benchmark twice"
    )
    progress(f"compiler: {compiler.version} ({compiler.why})")
    spec = WheelSpec.parse(request.stock or stock_spec(request.tensorflow, request.architecture))
    progress(f"stock wheel: {spec.label} (its environment, made once)")
    env = ensure_env(spec, python=request.python)
    tf_dir = tensorflow_dir(env.python)
    if tf_dir is None:
        raise InputError(
            f"{spec.label} installs no tensorflow package",
            fix="Name a TensorFlow wheel with --stock.",
        )
    return StockSide(
        release_flags=release_flags, compiler=compiler, wheel=spec, env=env, tensorflow=tf_dir
    )


def run_forecast(request: ForecastRequest, recipe: Recipe, *, progress: Progress) -> Forecast:
    """Compile, time in alternation and compare; refusals come before anything slow."""
    if request.elsewhere is not None:
        raise UnsupportedError(
            f"the plan is for the machine of {request.elsewhere}, not this one",
            why="its benchmark can be compiled here but only run there",
            fix="Add --emit DIR: it writes the benchmark and a one-line script to run on that "
            "machine.",
        )
    stock = prepare_stock(request, recipe, progress=progress)
    with tempfile.TemporaryDirectory(prefix="tfbuild-forecast-") as tmp:
        work = Path(tmp)
        include = copy_eigen(stock.tensorflow / "include", work, label=stock.wheel.label)
        (work / KERNELS).write_text(kernels_source(), encoding="utf-8")
        progress("compiling the benchmark twice (stock flags and the plan's), in parallel")
        flags, notes = compile_both(
            stock.compiler,
            include,
            work,
            {"stock": stock.release_flags.flags, "plan": request.cflags},
        )
        pooled = measure_until_decided(
            {side: work / side for side in flags},
            target=request.target,
            flags=flags,
            rounds=request.rounds,
            reps=request.reps,
            budget=request.budget,
            progress=progress,
        )
    progress("timing the same ops in the stock wheel's TensorFlow (eager, one thread)")
    timed = tensorflow_times(stock.env.python, reps=request.rounds * request.reps)
    if isinstance(timed, str):
        notes += (
            f"stock TensorFlow's own ops were not timed ({timed}): the ratios are the Eigen "
            "kernel's alone, more than TensorFlow would show",
        )
        timed = TensorFlowTimes(tensorflow="", elements=0, ops={})
    progress("asking oneDNN in the stock wheel which kernels it runs for matmul and conv")
    onednn = onednn_dispatch(stock.env.python)
    ops = tuple(
        OpForecast.of(
            name,
            klass,
            elements,
            stock=s,
            plan=p,
            tensorflow=timed.of(name, elements),
        )
        for name, (klass, elements, s, p) in pooled.items()
    )
    untimed = [o.name for o in ops if o.tensorflow is None]
    if untimed and timed.ops:
        notes += (
            f"stock TensorFlow gave no timing of {', '.join(untimed)}: their classes show the "
            "Eigen kernel's ratios alone",
        )
    clamped = [o.name for o in ops if o.tensorflow is not None and o.tensorflow.clamped]
    if clamped:
        notes += (
            f"stock TensorFlow ran {', '.join(clamped)} in less time than the stock build's "
            "kernel: its TensorFlow-level ratio is taken as the kernel's (TensorFlow may run "
            "other code there than the kernel timed)",
        )
    return Forecast(
        tensorflow=request.tensorflow,
        target=request.target,
        stock_wheel=stock.wheel.label,
        compiler=CompilerUsed(version=stock.compiler.version, why=stock.compiler.why),
        stock_flags=StockFlags(flags=flags["stock"], source=stock.release_flags.source),
        plan_flags=flags["plan"],
        notes=notes,
        ops=ops,
        classes=compare(ops),
        onednn=onednn,
    )
