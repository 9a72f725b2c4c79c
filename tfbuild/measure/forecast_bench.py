"""The forecast's benchmark: ``forecast_kernels.cc`` compiled twice (the stock release's flags and the
plan's) and the two binaries timed in alternation on one thread, round after round while an op's
kernel ratio is undecided and the budget lasts.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path

from tfbuild.core.compilers import CompilerExecutable
from tfbuild.core.errors import EnvironmentProblem, UnsupportedError
from tfbuild.core.stats import MAX_LOOKS, verdict
from tfbuild.measure.forecast_report import class_margin

Progress = Callable[[str], None]
#: Per op: its class, elements, the stock build's seconds per call, the plan build's.
Pooled = dict[str, tuple[str, int, list[float], list[float]]]

KERNELS = "forecast_kernels.cc"
#: What both builds share: the optimisation level TensorFlow's opt config uses, and C++17.
COMMON_FLAGS = ("-O2", "-DNDEBUG", "-std=c++17")


def kernels_source() -> str:
    return resources.files("tfbuild.measure").joinpath(KERNELS).read_text(encoding="utf-8")


def compile_argv(compiler: str, include: str, flags: Sequence[str], output: str) -> list[str]:
    return [compiler, *COMMON_FLAGS, f"-I{include}", *flags, "-o", output, KERNELS]


#: Eigen's AVX512-FP16 packet code (PacketMathFP16.h) in the 2.21 wheel's headers does not compile
#: with GCC 12 nor clang 16 (predux_half_dowto4). Without this flag only f16 arithmetic changes,
#: which no op here does; the forecast says so, since a real build may meet the same error.
_FP16 = "-mavx512fp16"


def compile_both(
    compiler: CompilerExecutable, include: Path, work: Path, sides: dict[str, tuple[str, ...]]
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
    pooled: Pooled | None = None,
    done: int = 0,
) -> Pooled:
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


def _undecided(pooled: Mapping[str, tuple[str, int, list[float], list[float]]]) -> list[str]:
    """The ops whose kernel ratio is not decided yet (at their class's margin)."""
    return [
        name
        for name, (klass, _, stock, plan) in pooled.items()
        if not verdict(plan, stock, paired=False, margin=class_margin(klass)).decided
    ]


def measure_until_decided(
    binaries: dict[str, Path],
    *,
    target: str,
    flags: dict[str, tuple[str, ...]],
    rounds: int,
    reps: int,
    budget: float,
    progress: Progress,
) -> Pooled:
    """``rounds`` rounds; then, while an op's kernel ratio is undecided and ``budget`` (seconds)
    allows another round, one more round each time, up to MAX_LOOKS looks in all."""
    began = time.monotonic()
    pooled: Pooled = {}
    done = 0
    for _look in range(MAX_LOOKS):
        measure(
            binaries,
            target=target,
            flags=flags,
            rounds=rounds,
            reps=reps,
            progress=progress,
            pooled=pooled,
            done=done,
        )
        done += rounds
        left = _undecided(pooled)
        each = (time.monotonic() - began) / done
        if not left or time.monotonic() - began + each > budget:
            break
        progress(f"{len(left)} op(s) undecided ({', '.join(left)}): one more round")
        rounds = 1
    return pooled
