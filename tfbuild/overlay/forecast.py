"""``tfbuild forecast``: what a build for the plan's target would gain here, measured on TensorFlow
itself before one runs.

A build for a target compiles TensorFlow's element-wise kernels for it; matmul and conv run oneDNN's
kernels, chosen at run time for the CPU, which a build does not change. So the forecast compiles
those kernels as ``tfbuild overlay`` does (:func:`tfbuild.overlay.build.build_overlay`: TensorFlow's
own, for the plan's target, with the recipe's clang in the overlay's toolchain image), loads them
into the stock TensorFlow, and times each op with them against stock's (``TFBUILD_OVERLAY=off``)
through the driver ``tfbuild smoke`` of that overlay uses (:func:`tfbuild.measure.run.compare`), at
one thread; and it asks oneDNN, in the same stock TensorFlow, which kernels it picks for matmul and
conv (:mod:`tfbuild.measure.forecast_onednn`).

A target this machine cannot run (a ``--cpuinfo`` plan, a ``--target`` beyond this CPU) is compiled
here and timed there: :func:`emit_forecast` writes the overlay wheel and a runner for it.
"""

from __future__ import annotations

import dataclasses
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tfbuild.core import commands
from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.detect import contention
from tfbuild.measure.envs import clean_env
from tfbuild.measure.forecast_onednn import onednn_call, read_probe
from tfbuild.measure.forecast_report import Forecast, KernelsBuilt, OneDnn, OpForecast, by_class
from tfbuild.measure.run import Method, compare
from tfbuild.overlay.build import OverlayRequest, Progress, beyond_here, build_overlay, install_into
from tfbuild.overlay.compile import loader_line
from tfbuild.overlay.prove import CONTROLS, LEFT_TO_STOCK, OFF, REPLACED

#: One thread, as the forecast has always been given: the kernels' own gain, no threading in it.
ONE_THREAD = (("1", 1, 1),)


@dataclass(frozen=True, kw_only=True)
class ForecastRequest:
    """The overlay a plan describes (compiled in the image, the command's default), and the
    forecast's own: the machine a ``--cpuinfo`` plan is for, the time the timing may take."""

    overlay: OverlayRequest
    elsewhere: str | None = None  # the other machine a --cpuinfo plan is for; None: this host
    budget: float = 60.0  # seconds for the timing: an undecided op gets more rounds meanwhile


def elsewhere(request: ForecastRequest) -> str | None:
    """Why the forecast cannot be timed here, or None when it can."""
    if request.elsewhere is not None:
        return f"the plan is for the machine of {request.elsewhere}, not this one"
    lacking = beyond_here(request.overlay.target)
    if lacking:
        return f"this CPU lacks {' '.join(lacking)} of {request.overlay.target}"
    return None


def run_forecast(request: ForecastRequest, *, progress: Progress) -> Forecast:
    """Compile the target's kernels, time them against stock's here, ask oneDNN; a plan this
    machine cannot run is refused before anything slow."""
    why = elsewhere(request)
    if why is not None:
        raise UnsupportedError(
            why,
            why="its kernels compile here but run only there",
            fix="Add --emit DIR: it writes the overlay wheel and run.sh, which times it on that "
            "machine (tfbuild smoke).",
        )
    with tempfile.TemporaryDirectory(prefix="tfbuild-forecast-") as tmp:
        # the special-value check is the overlay's promise to the machines it goes on; timing
        # needs only the kernels
        overlay = dataclasses.replace(request.overlay, out=Path(tmp) / "dist", check=False)
        built = build_overlay(overlay, progress=progress)
        site = Path(tmp) / "site-packages"  # TensorFlow loads the plugins of a site-packages
        install_into(built.wheel, site)
        target_env = clean_env() | {"PYTHONPATH": str(site)}
        # one import of TensorFlow with the kernels: the loader says they loaded, oneDNN which
        # kernels it picks for matmul and conv (the overlay replaces neither)
        progress("asking the stock TensorFlow whether the kernels load, and oneDNN what it runs")
        onednn = _loaded_and_onednn(built.stock_python, target_env, request.overlay.target)
        progress(
            f"each op with the kernels for {request.overlay.target} against stock's, in "
            "alternation, one thread (TFBUILD_OVERLAY=off)"
        )
        results = compare(
            built.stock_python,
            built.stock_python,
            candidate_env=target_env,
            baseline_env=target_env | OFF,
            method=Method(ops=(*REPLACED, *CONTROLS), budget=request.budget),
            thread_settings=ONE_THREAD,
            progress=progress,
        )
    ops = tuple(op for op in (OpForecast.of(r) for r in results) if op is not None)
    spans = [r.contention for r in results if r.contention is not None]
    receipt = built.receipt
    return Forecast(
        tensorflow=receipt.tensorflow,
        target=receipt.target,
        stock_wheel=receipt.stock,
        built=KernelsBuilt(
            wheel=built.wheel.name,
            sha256=receipt.wheel.sha256,
            kernels=len(receipt.kernels),
            compiler=receipt.compiler_version,
            image=receipt.image.tag if receipt.image is not None else None,
            cflags=receipt.cflags,
            left_to_stock=receipt.skipped,
            seconds=receipt.seconds,
        ),
        classes=by_class(ops),
        ops=ops,
        onednn=onednn,
        machine=contention.combine(spans) if spans else None,
        notes=_notes(ops),
    )


def _notes(ops: tuple[OpForecast, ...]) -> tuple[str, ...]:
    notes = [
        f"{', '.join(LEFT_TO_STOCK)}: not timed; the overlay leaves their kernels to stock "
        "(left_to_stock says why), a build compiles them for the target too"
    ]
    missing = [op for op in (*REPLACED, *CONTROLS) if op not in {o.name for o in ops}]
    if missing:
        notes.append(f"{', '.join(missing)}: not timed (the stock TensorFlow does not run them)")
    return tuple(notes)


#: How the loader says, under TFBUILD_OVERLAY=status, that it registered the kernels (loader.c).
LOADED = "): loaded, "


def _loaded_and_onednn(python: str, env: dict[str, str], target: str) -> OneDnn:
    """oneDNN's kernels for matmul and conv (:mod:`tfbuild.measure.forecast_onednn`), asked with
    the kernels in ``env``, which the loader must say it registered; else its error."""
    call = onednn_call(python, env | {"TFBUILD_OVERLAY": "status"})
    done = commands.attempt(call)
    said = loader_line(done.stderr, last=True)
    if said is None or LOADED not in said:
        failed = dataclasses.replace(
            call,
            what=f"the kernels for {target} did not load in the stock TensorFlow",
            error=UnsupportedError,
        )
        raise commands.failure(failed, done, said)
    return read_probe(done)


# --- a target measured on its own machine ---------------------------------------------------------

EMIT_SCHEMA: Literal["tfbuild.forecast-emit/2"] = "tfbuild.forecast-emit/2"
RUN_SCRIPT = "run.sh"


@dataclass(frozen=True, kw_only=True)
class Emitted:
    """The overlay wheel written for the machine that can run it, and the line that times it
    there."""

    schema: Literal["tfbuild.forecast-emit/2"] = EMIT_SCHEMA
    tensorflow: str
    target: str
    why: str  # why it is not timed here
    directory: str
    wheel: str
    script: str
    line: str  # what the script runs
    pending: tuple[str, ...]  # its special-value check waits for a CPU with these


def emit_forecast(request: ForecastRequest, out: Path, *, progress: Progress) -> Emitted:
    """Build the overlay for a plan this machine cannot run into ``out``, with ``run.sh``: on that
    machine it times the overlay against stock there (``tfbuild smoke``, which runs the
    overlay's pending check first)."""
    why = elsewhere(request)
    if why is None:
        raise UsageError(
            "--emit is for a plan this machine cannot run",
            fix="Add --cpuinfo FILE (that machine's /proc/cpuinfo) or a --target beyond this CPU, "
            "or drop --emit to forecast this one.",
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--emit {out} is not an empty directory", fix="Name a new or empty one.")
    built = build_overlay(dataclasses.replace(request.overlay, out=out), progress=progress)
    line = f'cd "$(dirname "$0")" && exec tfbuild smoke {shlex.quote(built.wheel.name)} "$@"'
    script = out / RUN_SCRIPT
    script.write_text(
        f"#!/bin/sh\n# tfbuild forecast for {built.receipt.target} (TensorFlow "
        f"{built.receipt.tensorflow}), to run on that machine with tfbuild installed: each op "
        "with these kernels against stock's\n" + line + "\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return Emitted(
        tensorflow=built.receipt.tensorflow,
        target=built.receipt.target,
        why=why,
        directory=str(out),
        wheel=str(built.wheel),
        script=str(script),
        line=line,
        pending=built.receipt.pending,
    )
