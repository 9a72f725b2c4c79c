"""The ``tfbuild forecast`` command: plan, compile the plan's kernels and time them, print it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tfbuild.cli.options import takes
from tfbuild.cli.output import indented, print_data, progressing
from tfbuild.core.controls import printable
from tfbuild.core.options import BUDGET, HOST_COMPILER, JSON, STOCK, declared, group, option
from tfbuild.plan.options import PlanOptions

if TYPE_CHECKING:
    from tfbuild.measure.forecast_report import Forecast


@dataclass(frozen=True, kw_only=True)
class ForecastArgs:
    """What ``tfbuild forecast`` was asked: the plan options, and the forecast's own."""

    stock: str | None = option(
        STOCK.but(help=f"{STOCK.help} The kernels are compiled against it and timed in it."),
        default=None,
    )
    emit: Path | None = declared(
        None,
        "--emit",
        metavar="DIR",
        help="For a plan this machine cannot run (--cpuinfo, or a --target beyond this CPU): "
        "write the overlay wheel and run.sh, which times it there (tfbuild smoke).",
    )
    compiler: str | None = option(HOST_COMPILER, default=None)
    budget: float = option(BUDGET, default=60.0)
    as_json: bool = option(JSON, default=False)
    plan: PlanOptions = group(PlanOptions)


@takes(ForecastArgs)
def forecast_command(forecast_args: ForecastArgs) -> None:
    """What a build would gain over the stock wheel on this machine, before anything is built."""
    from tfbuild.core.errors import UsageError
    from tfbuild.measure.forecast_store import save_forecast
    from tfbuild.overlay.build import OverlayRequest
    from tfbuild.overlay.forecast import ForecastRequest, emit_forecast, run_forecast
    from tfbuild.plan.here import plan_here

    args, emit, as_json = forecast_args.plan, forecast_args.emit, forecast_args.as_json
    plan = plan_here(args).plan
    if plan.architecture != "x86_64":
        raise UsageError(
            f"the forecast times TensorFlow's kernels compiled for x86-64 (this plan is for "
            f"{plan.architecture})",
            fix="Forecast on an x86-64 machine.",
        )
    request = ForecastRequest(
        overlay=OverlayRequest.of_plan(
            plan,
            host_compiler=forecast_args.compiler,
            in_image=forecast_args.compiler is None,
            stock=forecast_args.stock,
        ),
        elsewhere=str(args.cpuinfo) if args.cpuinfo is not None else None,
        budget=forecast_args.budget,
    )
    if emit is not None:
        with progressing("forecast", quiet=as_json) as progress:
            emitted = emit_forecast(request, emit, progress=progress)
        if as_json:
            print_data(emitted)
            return
        typer.echo(
            printable(
                f"{emitted.why}: the kernels for {emitted.target} compile here but are timed only "
                f"there. Copy {emitted.directory} to it and run: sh {emitted.script}"
            )
        )
        return
    with progressing("forecast", quiet=as_json) as progress:
        forecast = run_forecast(request, progress=progress)
        progress(
            f"kept for tfbuild smoke of a wheel built for {plan.target}: {save_forecast(forecast)}"
        )
    if as_json:
        print_data(forecast)
        return
    print_forecast(forecast)


def print_forecast(forecast: Forecast) -> None:
    """The summary line, then one row per op class and per op, then what was compiled how."""
    from tfbuild.cli.console import make_console
    from tfbuild.measure.forecast_report import CLASSES

    width = make_console().width

    def prose(text: str, indent: int = 2) -> list[str]:  # in the terminal's width
        return indented(text, width, rest=indent)

    lines = [*prose(forecast.summary), ""]
    lines.append(f"{'op':<16}{'stock':>8}{'target':>8}{'ratio':>8}  {'interval':<12}verdict")
    for klass in forecast.classes:
        low, high = klass.ratio
        lines += prose(
            f"{CLASSES[klass.klass]}: {low:.2f}-{high:.2f}x (interval "
            f"{klass.interval[0]:.2f}-{klass.interval[1]:.2f}), {klass.label}"
        )
        for op in forecast.ops:
            if op.klass == klass.klass:
                lines.append(
                    f"  {op.name:<14}{op.stock.throughput_median:>8.2f}"
                    f"{op.target.throughput_median:>8.2f}{op.ratio:>7.2f}x  "
                    f"{f'{op.interval[0]:.2f}-{op.interval[1]:.2f}':<12}{op.label}"
                )
    built = forecast.built
    lines += prose(
        f"(Gelem/s, medians of TensorFlow's own op at one thread: stock, the stock TensorFlow "
        f"with TFBUILD_OVERLAY=off; target, with its kernels compiled for {forecast.target}; "
        "ratio: stock's time over the target's, timed in alternation, a claim timed again in "
        "fresh processes)",
        indent=1,
    )
    lines += prose(f"matmul, conv: {forecast.onednn.describe()}")
    lines.append("")
    where = f"in {built.image}" if built.image else "on this host"
    lines += prose(
        f"compiled: {built.kernels} kernels of {forecast.stock_wheel} for {forecast.target} "
        f"with {built.compiler} {where}, {built.seconds:.0f} s (as tfbuild overlay builds "
        f"{built.wheel})"
    )
    lines += prose(f"  flags: {' '.join(built.cflags)}", 4)
    for left in left_to_stock(built.left_to_stock):
        lines += prose(f"  {left}", 4)
    if forecast.machine is not None:
        lines += prose(f"while timed, {forecast.machine.describe()}")
    for note in forecast.notes:
        lines += prose(f"note: {note}", 6)
    typer.echo(printable("\n".join(lines)))


def left_to_stock(entries: Sequence[str]) -> list[str]:
    """What an overlay left to stock (its receipt's "Log1p float32: why"), a line per op and reason:
    ``left to stock: Log1p (float32, float64): why``."""
    left: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        kernel, _, why = entry.partition(": ")
        op, _, dtype = kernel.partition(" ")
        left.setdefault((op, why), []).append(dtype)
    return [
        f"left to stock: {op} ({', '.join(dtypes)}): {why}" for (op, why), dtypes in left.items()
    ]


def print_forecast_beside(forecast: dict[str, Any] | None) -> None:
    """After tfbuild smoke: the forecast kept for the wheel's target beside what smoke measured,
    per op class (one thread), so that a wrong forecast shows."""
    if not forecast:
        return
    from tfbuild.cli.console import make_console
    from tfbuild.measure.forecast_report import CLASSES

    width = make_console().width
    head = f"forecast beside this smoke, one thread, per op class (kept in {forecast['file']}):"
    lines = ["", *indented(head, width)]
    for row in forecast["classes"]:
        low, high = row["forecast"]
        measured = row["measured"]
        seen = (
            f"measured {measured[0]:.2f}-{measured[1]:.2f}x ({', '.join(row['ops'])})"
            if measured
            else "not measured by smoke"
        )
        text = (
            f"  {CLASSES.get(row['class'], row['class'])}: forecast {low:.2f}-{high:.2f}x, {seen}"
        )
        lines += indented(text, width, rest=4)
    typer.echo(printable("\n".join(lines)))
