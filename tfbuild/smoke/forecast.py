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
the kernel's saving over to it (:func:`tfbuild.smoke.forecast_report.tensorflow_ratio`).

The results, the summary and the JSON are :mod:`tfbuild.smoke.forecast_report`'s.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from tfbuild.core import serial
from tfbuild.core.errors import EnvironmentProblem, InputError, UnsupportedError, UsageError
from tfbuild.core.stats import MAX_LOOKS, verdict
from tfbuild.detect.system import default_cache_dir
from tfbuild.recipes.recipe import Recipe
from tfbuild.smoke.envs import TestEnv, WheelSpec, clean_env, ensure_env
from tfbuild.smoke.forecast_report import (
    SCHEMA,
    CompilerUsed,
    Forecast,
    OneDnn,
    OpResult,
    StockFlags,
    class_margin,
    compare,
)
from tfbuild.smoke.session import stock_spec

Progress = Callable[[str], None]

KERNELS = "forecast_kernels.cc"
#: The Eigen trees the benchmark includes, under the wheel's tensorflow/include.
EIGEN_TREES = ("Eigen", "unsupported/Eigen")
#: What both builds share: the optimisation level TensorFlow's opt config uses, and C++17.
COMMON_FLAGS = ("-O2", "-DNDEBUG", "-std=c++17")


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


# --- the compiler ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Compiler:
    path: str
    family: str  # "clang" or "gcc"
    version: str  # the first line of --version
    why: str  # why this one, in words


#: C++ compilers by family, in the order they are looked for on PATH.
_NAMES = {
    "clang": ("clang++", *(f"clang++-{v}" for v in range(22, 13, -1))),
    "gcc": ("g++", *(f"g++-{v}" for v in range(15, 8, -1))),
}


def _family_of(path: str) -> tuple[str, str] | None:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = (out.stdout.strip().splitlines() or [""])[0]
    if out.returncode != 0 or not first:
        return None
    return ("clang" if "clang" in first.lower() else "gcc"), first


def find_compiler(plan_compiler: str) -> Compiler:
    """The plan's compiler family when this host has one, otherwise the host's C++ compiler."""
    wanted = "clang" if plan_compiler.startswith("clang") else "gcc"
    other = "gcc" if wanted == "clang" else "clang"
    for names in (_NAMES[wanted], _NAMES[other], ("c++",)):
        for name in names:
            path = shutil.which(name)
            if path is None:
                continue
            found = _family_of(path)
            if found is None:
                continue
            kind, version = found
            why = (
                f"the plan's compiler family ({plan_compiler})"
                if kind == wanted
                else f"this host has no {wanted} (the plan's {plan_compiler}): its {kind} instead"
            )
            return Compiler(path=path, family=kind, version=version, why=why)
    raise EnvironmentProblem(
        "no C++ compiler on this host",
        why="the forecast compiles a small benchmark twice (clang++, g++ or c++ on PATH)",
        fix="Install one (apt-get install g++, or clang), or put it on PATH.",
    )


# --- the Eigen headers of the stock wheel -------------------------------------------------------------


_FIND_TENSORFLOW = (
    "import importlib.util, sys; s = importlib.util.find_spec('tensorflow'); "
    "sys.stdout.write(s.submodule_search_locations[0] if s and s.submodule_search_locations "
    "else '')"
)


def tensorflow_dir(python: str) -> Path | None:
    """Where the interpreter's tensorflow package lives (found, not imported)."""
    try:
        out = subprocess.run(
            [python, "-c", _FIND_TENSORFLOW],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=clean_env(),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout) if out.returncode == 0 and out.stdout else None


def copy_eigen(include: Path, into: Path, *, label: str) -> Path:
    """Copy the wheel's Eigen headers into ``into``/include, each checked to be a regular file
    inside ``include`` (a wheel is untrusted input: no link, device or path out of it reaches the
    compiler). Returns the include directory of the copy."""
    missing = InputError(
        f"{label} has no Eigen headers",
        why=f"{include}/Eigen and {include}/unsupported/Eigen are where TensorFlow wheels ship "
        "them, and they are not there",
        fix="Forecast against a TensorFlow wheel that ships its headers (tensorflow-cpu from "
        "the package index does).",
    )
    try:
        root = include.resolve(strict=True)
    except OSError:
        raise missing from None
    target = into / "include"
    for tree in EIGEN_TREES:
        top = include / tree
        if not top.is_dir() or top.is_symlink():
            raise missing
        for here, dirs, files in os.walk(top):
            for name in sorted(dirs + files):
                path = Path(here) / name
                mode = path.lstat().st_mode
                inside = path.resolve().is_relative_to(root)
                if stat.S_ISDIR(mode) and inside:
                    continue
                if not (stat.S_ISREG(mode) and inside):
                    raise InputError(
                        f"{label} ships an Eigen header that is not a plain file: "
                        f"{path.relative_to(include)}",
                        why="only regular files inside the wheel's include directory are "
                        "compiled (a link or device could read anything on this host)",
                        fix="Forecast against an unmodified wheel.",
                    )
                dest = target / path.relative_to(include)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest)
    if not (target / "unsupported/Eigen/CXX11/Tensor").is_file():
        raise missing
    return target


# --- compiling and timing ----------------------------------------------------------------------------


def kernels_source() -> str:
    return resources.files("tfbuild.smoke").joinpath(KERNELS).read_text(encoding="utf-8")


def compile_argv(compiler: str, include: str, flags: Sequence[str], output: str) -> list[str]:
    return [compiler, *COMMON_FLAGS, f"-I{include}", *flags, "-o", output, KERNELS]


#: Eigen's AVX512-FP16 packet code (PacketMathFP16.h) in the 2.21 wheel's headers does not compile
#: with GCC 12 nor clang 16 (predux_half_dowto4). Without this flag only f16 arithmetic changes,
#: which no op here does; the forecast says so, since a real build may meet the same error.
_FP16 = "-mavx512fp16"


def _compile_both(
    compiler: Compiler, include: Path, work: Path, sides: dict[str, tuple[str, ...]]
) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """Compile each side's binary in parallel; returns the flags each was built with, and notes."""
    notes: list[str] = []
    used = dict(sides)
    for attempt in range(2):
        procs = {
            side: subprocess.Popen(  # argv built here, no shell
                compile_argv(compiler.path, str(include), flags, side),
                cwd=work,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for side, flags in used.items()
            if not (work / side).is_file()
        }
        failed = {}
        for side, proc in procs.items():
            _, err = proc.communicate()
            if proc.returncode != 0:
                failed[side] = err
        if not failed:
            return used, tuple(notes)
        side, err = next(iter(failed.items()))
        if attempt == 0 and _FP16 in used[side] and "PacketMathFP16" in err:
            used[side] = tuple(f for f in used[side] if f != _FP16)
            notes.append(
                f"{_FP16} left out of the {side} build: Eigen's AVX512-FP16 code in these "
                f"headers does not compile with {compiler.version} (no op here does f16 "
                "arithmetic; a real build may meet the same error)"
            )
            continue
        errors = [line for line in err.splitlines() if "error" in line] or err.splitlines()
        raise EnvironmentProblem(
            f"{compiler.version} cannot compile the benchmark with the {side} flags "
            f"({' '.join(used[side])})",
            why=(errors or ["(no output)"])[0][-300:],
            fix="Install the plan's compiler (or a newer one) and run again.",
        )
    raise AssertionError("unreachable")


def _run_side(binary: Path, reps: int) -> dict[str, tuple[str, int, list[float]]]:
    """One run of a benchmark binary: each op's class, elements and seconds per call."""
    proc = subprocess.run(  # argv built here, no shell
        [str(binary), str(reps)], capture_output=True, text=True, timeout=300, check=False
    )
    if proc.returncode != 0:
        raise _RunFailed(proc.returncode)
    timings: dict[str, tuple[str, int, list[float]]] = {}
    for line in proc.stdout.splitlines():
        name, klass, elements, *seconds = line.split("\t")
        timings[name] = (klass, int(elements), [float(s) for s in seconds])
    return timings


class _RunFailed(Exception):
    def __init__(self, returncode: int) -> None:
        super().__init__(returncode)
        self.returncode = returncode


def _cannot_run(target: str, returncode: int, flags: Sequence[str]) -> UnsupportedError:
    died = (
        "it stopped on an instruction this CPU does not have (SIGILL)"
        if returncode == -signal.SIGILL
        else f"it exited with {returncode}"
    )
    return UnsupportedError(
        f"the benchmark compiled for {target} does not run on this machine",
        why=f"{died}; its flags: {' '.join(flags)}",
        fix="Forecast it on a machine of that kind: tfbuild forecast --emit DIR writes the "
        "benchmark and the line that runs it there.",
    )


def measure(
    binaries: dict[str, Path],
    *,
    target: str,
    flags: dict[str, tuple[str, ...]],
    rounds: int,
    reps: int,
    progress: Progress,
    pooled: dict[str, tuple[str, int, list[float], list[float]]] | None = None,
    done: int = 0,
) -> dict[str, tuple[str, int, list[float], list[float]]]:
    """Run the two builds in alternation (stock first, then plan first, ...), pooled per op:
    class, elements, stock seconds, plan seconds; ``pooled`` and ``done``: the rounds so far, to
    add to."""
    pooled = {} if pooled is None else pooled
    for r in range(done, done + rounds):
        progress(f"timing round {r + 1} (stock and plan builds, alternating)")
        order = ("stock", "plan") if r % 2 == 0 else ("plan", "stock")
        for side in order:
            try:
                timings = _run_side(binaries[side], reps)
            except _RunFailed as exc:
                raise _cannot_run(
                    target if side == "plan" else "the stock flags", exc.returncode, flags[side]
                ) from None
            for name, (klass, elements, seconds) in timings.items():
                entry = pooled.setdefault(name, (klass, elements, [], []))
                (entry[2] if side == "stock" else entry[3]).extend(seconds)
    return pooled


# --- stock TensorFlow's own ops ------------------------------------------------------------------------

TF_TIMER = Path(__file__).with_name("_forecast_tf.py")


@dataclass(frozen=True, kw_only=True)
class TensorFlowTimes:
    """What ``_forecast_tf.py`` prints: stock TensorFlow's seconds per call of each op."""

    tensorflow: str
    elements: int
    ops: dict[str, list[float]]

    def of(self, name: str, elements: int) -> list[float] | None:
        """The op's seconds per call when it was timed on ``elements`` (positive, finite)."""
        seconds = self.ops.get(name) if elements == self.elements else None
        if not seconds or not all(math.isfinite(s) and s > 0 for s in seconds):
            return None
        return seconds


def tensorflow_times(python: str, *, reps: int) -> TensorFlowTimes | str:
    """Each of the forecast's ops timed in the stock wheel's TensorFlow (eager, one thread, the
    kernels' tensors), or why not, in words."""
    env = clean_env() | {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    try:
        proc = subprocess.run(  # argv built here, no shell
            [python, str(TF_TIMER), str(reps)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"it could not be run ({exc})"
    lines = proc.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if isinstance(data, dict) and "error" in data:
        return f"it failed: {str(data['error'])[:300]}"
    if proc.returncode != 0 or data is None:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][-300:]
        return f"it exited with {proc.returncode}: {last}"
    try:
        return serial.from_data(data, TensorFlowTimes)
    except serial.DecodeFailure as exc:
        return f"its output does not read ({exc})"


# --- oneDNN in the stock wheel -------------------------------------------------------------------------


_ONEDNN_PROBE = """
import tensorflow as tf
a = tf.random.normal([512, 512]); tf.linalg.matmul(a, a)
x = tf.random.normal([1, 32, 32, 16]); k = tf.random.normal([3, 3, 16, 16])
tf.nn.conv2d(x, k, 1, "SAME")
"""

_KINDS = {
    "matmul": "matmul",
    "gemm_api": "matmul",
    "inner_product": "matmul",
    "convolution": "conv",
}


def onednn_dispatch(python: str) -> OneDnn:
    """Which kernels oneDNN runs for matmul and conv in the stock wheel on this machine, from its
    verbose output (ONEDNN_VERBOSE=1): the ISA it detected and each primitive's implementation."""
    env = clean_env() | {"ONEDNN_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": "1"}
    try:
        proc = subprocess.run(
            [python, "-c", _ONEDNN_PROBE],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return OneDnn(isa=None, kernels={}, error=f"tfbuild's oneDNN probe did not run: {exc}")
    failed = ""
    if proc.returncode != 0:
        last = next((line for line in reversed(proc.stderr.splitlines()) if line.strip()), "")
        failed = f"tfbuild's oneDNN probe exited with {proc.returncode}" + (
            f": {last.strip()[:200]}" if last else ""
        )
    return read_onednn_verbose(proc.stdout + proc.stderr, failed=failed)


#: The verbose lines of oneDNN: "onednn_verbose," (2.x, 3.x), "dnnl_verbose," (before 2.x).
_VERBOSE_PREFIXES = ("onednn_verbose", "dnnl_verbose")


def _verbose_fields(line: str) -> list[str] | None:
    """A oneDNN verbose line's fields after its prefix, the same for every format oneDNN has had:
    without the format marker ("v1", from oneDNN 3.1) and the "primitive" category (3.x), so
    that "info,cpu,isa:..." and "exec,cpu,KIND,IMPLEMENTATION,..." come first."""
    fields = line.split(",")
    if fields[0] not in _VERBOSE_PREFIXES:
        return None
    rest = fields[1:]
    if rest and re.fullmatch(r"v\d+", rest[0]):
        rest = rest[1:]
    if rest and rest[0] == "primitive":
        rest = rest[1:]
    return rest


def read_onednn_verbose(output: str, *, failed: str = "") -> OneDnn:
    """What oneDNN's verbose ``output`` says it ran (see :func:`onednn_dispatch`); ``failed``: how
    the probe failed, when it did. Every failure to read it is said as tfbuild's, never as a
    question about the wheel."""
    isa = None
    kernels: dict[str, list[str]] = {}
    seen = False
    for line in output.splitlines():
        fields = _verbose_fields(line.strip())
        if fields is None:
            continue
        seen = True
        if fields[:2] == ["info", "cpu"] and len(fields) > 2 and fields[2].startswith("isa:"):
            isa = ",".join(fields[2:])[4:].strip()
        if fields[:2] == ["exec", "cpu"] and len(fields) > 3 and fields[2] in _KINDS:
            impl = fields[3] or ("oneDNN's sgemm" if fields[2] == "gemm_api" else "?")
            kind = _KINDS[fields[2]]
            if impl not in kernels.setdefault(kind, []):
                kernels[kind].append(impl)
    error = failed or None
    if error is None and not seen:
        error = (
            "the stock wheel printed no oneDNN verbose line under tfbuild's probe: oneDNN ran "
            "none of its matmul and conv there"
        )
    elif error is None and isa is None:
        error = "tfbuild's oneDNN probe could not read the ISA from oneDNN's verbose lines"
    elif error is None and not kernels:
        error = "tfbuild's oneDNN probe read no matmul or conv kernel from oneDNN's verbose lines"
    return OneDnn(isa=isa, kernels={k: tuple(v) for k, v in sorted(kernels.items())}, error=error)


# --- the forecast ---------------------------------------------------------------------------------


def _stock_side(
    request: ForecastRequest, recipe: Recipe, *, progress: Progress
) -> tuple[StockFlags, Compiler, WheelSpec, TestEnv, Path]:
    """What a forecast and an emitted benchmark both start from: the stock release's flags, the
    compiler, the stock wheel, its environment (made once) and that environment's tensorflow."""
    stock = stock_flags(recipe)
    compiler = find_compiler(request.compiler)
    progress(f"compiler: {compiler.version} ({compiler.why})")
    spec = WheelSpec.parse(request.stock or _stock_requirement(request))
    progress(f"stock wheel: {spec.label} (its environment, made once)")
    env = ensure_env(spec, python=request.python)
    tf_dir = tensorflow_dir(env.python)
    if tf_dir is None:
        raise InputError(
            f"{spec.label} installs no tensorflow package",
            fix="Name a TensorFlow wheel with --stock.",
        )
    return stock, compiler, spec, env, tf_dir


def run_forecast(request: ForecastRequest, recipe: Recipe, *, progress: Progress) -> Forecast:
    """Compile, time in alternation and compare; refusals come before anything slow."""
    if request.elsewhere is not None:
        raise UnsupportedError(
            f"the plan is for the machine of {request.elsewhere}, not this one",
            why="its benchmark can be compiled here but only run there",
            fix="Add --emit DIR: it writes the benchmark and a one-line script to run on that "
            "machine.",
        )
    stock, compiler, spec, env, tf_dir = _stock_side(request, recipe, progress=progress)
    with tempfile.TemporaryDirectory(prefix="tfbuild-forecast-") as tmp:
        work = Path(tmp)
        include = copy_eigen(tf_dir / "include", work, label=spec.label)
        (work / KERNELS).write_text(kernels_source(), encoding="utf-8")
        progress("compiling the benchmark twice (stock flags and the plan's), in parallel")
        flags, notes = _compile_both(
            compiler, include, work, {"stock": stock.flags, "plan": request.cflags}
        )
        pooled = _measure_until_decided(
            request, {side: work / side for side in flags}, flags, progress
        )
    progress("timing the same ops in the stock wheel's TensorFlow (eager, one thread)")
    timed = tensorflow_times(env.python, reps=request.rounds * request.reps)
    if isinstance(timed, str):
        notes += (
            f"stock TensorFlow's own ops were not timed ({timed}): the ratios are the Eigen "
            "kernel's alone, more than TensorFlow would show",
        )
        timed = TensorFlowTimes(tensorflow="", elements=0, ops={})
    progress("asking oneDNN in the stock wheel which kernels it runs for matmul and conv")
    onednn = onednn_dispatch(env.python)
    ops = tuple(
        OpResult.of(
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
        stock_wheel=spec.label,
        compiler=CompilerUsed(version=compiler.version, why=compiler.why),
        stock_flags=StockFlags(flags=flags["stock"], source=stock.source),
        plan_flags=flags["plan"],
        notes=notes,
        ops=ops,
        classes=compare(ops),
        onednn=onednn,
    )


def _undecided(pooled: Mapping[str, tuple[str, int, list[float], list[float]]]) -> list[str]:
    return [
        name
        for name, (klass, _, stock, plan) in pooled.items()
        if not verdict(plan, stock, paired=False, margin=class_margin(klass)).decided
    ]


def _measure_until_decided(
    request: ForecastRequest,
    binaries: dict[str, Path],
    flags: dict[str, tuple[str, ...]],
    progress: Progress,
) -> dict[str, tuple[str, int, list[float], list[float]]]:
    """``request.rounds`` rounds; then, while an op's kernel ratio is undecided and the budget
    allows another round, one more round each time, up to MAX_LOOKS looks in all."""
    began = time.monotonic()
    pooled: dict[str, tuple[str, int, list[float], list[float]]] = {}
    done, rounds = 0, request.rounds
    for _look in range(MAX_LOOKS):
        measure(
            binaries,
            target=request.target,
            flags=flags,
            rounds=rounds,
            reps=request.reps,
            progress=progress,
            pooled=pooled,
            done=done,
        )
        done += rounds
        undecided = _undecided(pooled)
        each = (time.monotonic() - began) / done
        if not undecided or time.monotonic() - began + each > request.budget:
            break
        progress(f"{len(undecided)} op(s) undecided ({', '.join(undecided)}): one more round")
        rounds = 1
    return pooled


def _stock_requirement(request: ForecastRequest) -> str:
    return stock_spec(request.tensorflow, request.architecture)


#: What an emitted benchmark measures, in words: run.sh says it on stderr, README.txt at length.
KERNEL_ONLY = (
    "these are the Eigen kernels alone: median(stock) / median(plan) per op is the kernel's "
    "ratio; TensorFlow's own ops gain less (each call also pays for dispatch and its output's "
    "allocation, the same whatever the flags)"
)


EMIT_SCHEMA: Literal["tfbuild.forecast-emit/1"] = "tfbuild.forecast-emit/1"


@dataclass(frozen=True, kw_only=True)
class Emitted:
    """The benchmark written for another machine: where, and the line that runs it there."""

    schema: Literal["tfbuild.forecast-emit/1"] = EMIT_SCHEMA
    directory: str
    script: str
    line: str
    compiled_here_with: str  # the compiler's version
    stock_flags: tuple[str, ...]
    plan_flags: tuple[str, ...]
    notes: tuple[str, ...]
    measures: str = KERNEL_ONLY  # what run.sh's numbers are: the kernels alone, not TensorFlow


RUN_SCRIPT = "run.sh"
README = "README.txt"


def run_line(stock: Sequence[str], plan: Sequence[str], *, rounds: int, reps: int) -> str:
    """One shell line that compiles both builds with $CXX (default c++) and times them in
    alternation, each output line prefixed with its side."""

    def build(side: str, flags: Sequence[str]) -> str:
        argv = compile_argv('"${CXX:-c++}"', "include", flags, side)
        return " ".join(argv[:1] + [shlex.quote(a) for a in argv[1:]])

    runs = " ".join(
        f"./{a} {reps} | sed 's/^/{a}\t/'; ./{b} {reps} | sed 's/^/{b}\t/';"
        for a, b in (("stock", "plan") if r % 2 == 0 else ("plan", "stock") for r in range(rounds))
    )
    said = f"echo {shlex.quote('tfbuild forecast: ' + KERNEL_ONLY)} >&2;"
    return (
        f'cd "$(dirname "$0")" && {build("stock", stock)} && {build("plan", plan)} && '
        f"{{ {said} {runs} }}"
    )


def _readme(request: ForecastRequest, line: str) -> str:
    return (
        f"tfbuild forecast for {request.target} (TensorFlow {request.tensorflow}), to run on "
        f"the machine of {request.elsewhere or 'the plan'}.\n\n"
        f"Run: sh {RUN_SCRIPT} (a C++ compiler is all it needs; CXX=... picks one).\n"
        "It compiles forecast_kernels.cc against the stock wheel's Eigen headers (include/) "
        "twice, with the stock release's flags and with the plan's, and times both in "
        "alternation on one thread. Each output line: side (stock or plan), op, op class, "
        "elements, then seconds per call.\n\n"
        f"Note: {KERNEL_ONLY}. Here tfbuild forecast also times stock TensorFlow's own ops and "
        "shows the ratio TensorFlow would see, T / (T - D), T being stock TensorFlow's seconds "
        "per call and D the kernel's saving per call; on that machine, with the stock wheel "
        "installed, `tfbuild forecast` run there gives it.\n\n"
        f"The line run.sh runs:\n{line}\n"
    )


def emit_forecast(
    request: ForecastRequest, recipe: Recipe, out: Path, *, progress: Progress
) -> Emitted:
    """Write the benchmark, the stock wheel's Eigen headers and a one-line script into ``out``
    for the machine a --cpuinfo plan is for; both builds are compiled here first, to prove they
    compile."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(
            f"--emit {out} is not an empty directory",
            fix="Name a new or empty directory.",
        )
    stock, compiler, spec, _env, tf_dir = _stock_side(request, recipe, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    include = copy_eigen(tf_dir / "include", out, label=spec.label)
    (out / KERNELS).write_text(kernels_source(), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="tfbuild-forecast-") as tmp:
        shutil.copyfile(out / KERNELS, Path(tmp) / KERNELS)
        progress("compiling the benchmark twice here (stock flags and the plan's), to check")
        flags, notes = _compile_both(
            compiler, include, Path(tmp), {"stock": stock.flags, "plan": request.cflags}
        )
    line = run_line(stock.flags, request.cflags, rounds=request.rounds, reps=request.reps)
    script = out / RUN_SCRIPT
    script.write_text("#!/bin/sh\n" + line + "\n", encoding="utf-8")
    script.chmod(0o755)
    (out / README).write_text(_readme(request, line), encoding="utf-8")
    return Emitted(
        directory=str(out),
        script=str(script),
        line=line,
        compiled_here_with=compiler.version,
        stock_flags=flags["stock"],
        plan_flags=flags["plan"],
        notes=notes,
    )


# --- kept for tfbuild smoke -----------------------------------------------------------------------


def forecasts_dir() -> Path:
    return default_cache_dir() / "forecasts"


def _forecast_file(tensorflow: str, target: str) -> Path:
    release = re.match(r"\d+\.\d+\.\d+", tensorflow)
    version = release.group(0) if release else "unknown"
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", target)
    return forecasts_dir() / f"tf-{version}-{safe}.json"


def save_forecast(forecast: Forecast) -> Path:
    """Keep the forecast where ``tfbuild smoke`` finds it for a wheel of that version and target."""
    path = _forecast_file(forecast.tensorflow, forecast.target)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".tmp")
    staging.write_text(json.dumps(serial.to_data(forecast), indent=2) + "\n", encoding="utf-8")
    staging.replace(path)
    return path


def saved_forecast(tensorflow: str | None, built_for: str | None) -> dict[str, Any] | None:
    """The forecast kept for a wheel of this version, built for this target (the receipt's
    ``built_for``: "icelake (-march=...)"); None when there is none or it does not read."""
    if not tensorflow or not built_for:
        return None
    path = _forecast_file(tensorflow, built_for.split(" ")[0])
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    return data | {"saved": str(path)}
