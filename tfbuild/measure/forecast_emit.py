"""The forecast's benchmark written for another machine (``tfbuild forecast --emit DIR``, a plan
made with ``--cpuinfo``): the kernels' source, the stock wheel's Eigen headers, a one-line
``run.sh`` that compiles and times both builds with whatever C++ compiler is there, and a README.
Both builds are compiled here first, to prove they compile.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tfbuild.core.errors import UsageError
from tfbuild.measure.eigen_headers import copy_eigen
from tfbuild.measure.forecast import ForecastRequest, prepare_stock
from tfbuild.measure.forecast_bench import KERNELS, compile_argv, compile_both, kernels_source
from tfbuild.recipes.recipe import Recipe

Progress = Callable[[str], None]

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
    stock = prepare_stock(request, recipe, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    include = copy_eigen(stock.tensorflow / "include", out, label=stock.wheel.label)
    (out / KERNELS).write_text(kernels_source(), encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="tfbuild-forecast-") as tmp:
        shutil.copyfile(out / KERNELS, Path(tmp) / KERNELS)
        progress("compiling the benchmark twice here (stock flags and the plan's), to check")
        flags, notes = compile_both(
            stock.compiler,
            include,
            Path(tmp),
            {"stock": stock.release_flags.flags, "plan": request.cflags},
        )
    line = run_line(
        stock.release_flags.flags, request.cflags, rounds=request.rounds, reps=request.reps
    )
    script = out / RUN_SCRIPT
    script.write_text("#!/bin/sh\n" + line + "\n", encoding="utf-8")
    script.chmod(0o755)
    (out / README).write_text(_readme(request, line), encoding="utf-8")
    return Emitted(
        directory=str(out),
        script=str(script),
        line=line,
        compiled_here_with=stock.compiler.version,
        stock_flags=flags["stock"],
        plan_flags=flags["plan"],
        notes=notes,
    )
