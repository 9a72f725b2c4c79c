"""The ``tfbuild forecast`` command: plan, hand the plan's facts to the forecast, print it."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from tfbuild.cli.options import takes
from tfbuild.cli.output import progressing
from tfbuild.core import serial
from tfbuild.core.controls import printable
from tfbuild.core.options import BUDGET, JSON, STOCK, Cli, group, option
from tfbuild.plan.options import PlanOptions


def _print_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


@dataclass(frozen=True, kw_only=True)
class ForecastArgs:
    """What ``tfbuild forecast`` was asked: the plan options, and the forecast's own."""

    stock: str | None = option(
        STOCK.but(
            help="The stock wheel whose Eigen headers are compiled: a .whl or a requirement "
            "(default: the package index's tensorflow-cpu of the plan's version)."
        ),
        default=None,
    )
    emit: Path | None = option(
        Cli(
            flags=("--emit",),
            metavar="DIR",
            help="For a --cpuinfo plan: write the benchmark and a one-line script (run.sh) that "
            "runs it on that machine (a C++ compiler is all it needs).",
            show_default=False,
        ),
        default=None,
    )
    budget: float = option(BUDGET, default=120.0)
    as_json: bool = option(JSON, default=False)
    plan: PlanOptions = group(PlanOptions)


@takes(ForecastArgs)
def forecast_command(forecast_args: ForecastArgs) -> None:
    """What a build would gain over the stock wheel on this machine, before anything is built."""
    from tfbuild.core.errors import UsageError
    from tfbuild.measure.forecast import ForecastRequest, run_forecast
    from tfbuild.measure.forecast_emit import emit_forecast
    from tfbuild.measure.forecast_store import save_forecast
    from tfbuild.plan.here import plan_here

    args, emit, as_json = forecast_args.plan, forecast_args.emit, forecast_args.as_json
    if emit is not None and args.cpuinfo is None:
        raise UsageError(
            "--emit is for a plan for another machine",
            fix="Add --cpuinfo FILE (that machine's /proc/cpuinfo), or drop --emit to forecast "
            "this one.",
        )
    planned = plan_here(args)
    plan, recipe = planned.plan, planned.recipe
    assert recipe is not None  # a plan made from options has its recipe
    request = ForecastRequest(
        tensorflow=plan.tensorflow,
        architecture=plan.architecture,
        target=plan.target,
        cflags=plan.cflags,
        compiler=plan.compiler,
        elsewhere=str(args.cpuinfo) if args.cpuinfo is not None else None,
        stock=forecast_args.stock,
        budget=forecast_args.budget,
    )

    if emit is not None:
        with progressing("forecast", quiet=as_json) as progress:
            emitted = emit_forecast(request, recipe, emit, progress=progress)
        if as_json:
            _print_json(serial.to_data(emitted))
            return
        typer.echo(
            printable(
                f"the plan is for the machine of {args.cpuinfo}: the benchmark compiles here but "
                f"runs only there. Copy {emitted.directory} to it and run: sh {emitted.script}"
            )
        )
        typer.echo(printable(f"note: {emitted.measures} (README.txt there says more)"))
        for note in emitted.notes:
            typer.echo(printable(f"note: {note}"))
        return
    with progressing("forecast", quiet=as_json) as progress:
        forecast = run_forecast(request, recipe, progress=progress)
        progress(
            f"kept for tfbuild smoke of a wheel built for {plan.target}: {save_forecast(forecast)}"
        )
    if as_json:
        _print_json(serial.to_data(forecast))
        return
    print_forecast(forecast)


def print_forecast(forecast: Any) -> None:
    """The summary line, then one row per op class and per op, then what was compiled how."""
    from tfbuild.cli.console import make_console
    from tfbuild.core.text import wrap
    from tfbuild.measure.forecast_report import CLASSES, TENSORFLOW

    width = make_console().width

    def prose(text: str, indent: int = 2) -> list[str]:
        """A sentence in lines of the terminal's width, further lines indented."""
        return [
            " " * (indent if i else 0) + line
            for i, line in enumerate(wrap(text, width, rest=indent))
        ]

    lines = [*prose(forecast.summary), ""]
    lines.append(
        f"{'op':<16}{'stock':>8}{'plan':>8}{'kernel':>8}{'stock TF':>10}{'in TF':>8}  "
        f"{'interval':<11}verdict"
    )
    for klass in forecast.classes:
        at = "in TensorFlow" if klass.level == TENSORFLOW else "Eigen kernel (TF not timed)"
        kernel = klass.kernel
        lines += prose(
            f"{CLASSES[klass.klass]}: {klass.low:.2f}-{klass.high:.2f}x {at} "
            f"(interval {klass.interval[0]:.2f}-{klass.interval[1]:.2f}), {klass.label}; "
            f"Eigen kernel alone {kernel.ratio[0]:.2f}-{kernel.ratio[1]:.2f}x"
        )
        for op in forecast.ops:
            if op.klass != klass.klass:
                continue
            ratio, (low, high), label = op.shown(klass.level)
            tf = op.tensorflow
            lines.append(
                f"  {op.name:<14}{op.stock.throughput_median:>8.2f}"
                f"{op.plan.throughput_median:>8.2f}{op.ratio:>7.2f}x"
                + (f"{tf.throughput:>10.2f}{ratio:>7.2f}x  " if tf else f"{'-':>10}{'-':>8}  ")
                + f"{f'{low:.2f}-{high:.2f}':<10} {label}"
            )
    lines += prose(
        "(stock, plan: the Eigen kernel built with each side's flags, Gelem/s; kernel: their "
        "ratio; stock TF: stock TensorFlow's own op, eager, one thread, Gelem/s; in TF: the ratio "
        "TensorFlow would show, T / (T - D) with T stock TensorFlow's time per call and D the "
        "kernel's saving; the interval and verdict are for it)",
        indent=1,
    )
    lines += prose(f"matmul, conv: {forecast.onednn.describe()}")
    lines.append("")
    lines += prose(f"compiled with {forecast.compiler.version} ({forecast.compiler.why})")
    lines += prose(
        f"  stock: {' '.join(forecast.stock_flags.flags)} ({forecast.stock_flags.source})", 9
    )
    lines += prose(f"  plan:  {' '.join(forecast.plan_flags)}", 9)
    lines.append(f"  against the Eigen headers of {forecast.stock_wheel}, one thread")
    for note in forecast.notes:
        lines += prose(f"note: {note}", 6)
    typer.echo(printable("\n".join(lines)))


def print_forecast_beside(forecast: dict[str, Any] | None) -> None:
    """After tfbuild smoke: the forecast kept for the wheel's target beside what smoke measured,
    per op class (one thread), so that a wrong forecast shows."""
    if not forecast:
        return
    from tfbuild.cli.console import make_console
    from tfbuild.core.text import wrap
    from tfbuild.measure.forecast_report import CLASSES

    width = make_console().width
    head = f"forecast beside this smoke, one thread, per op class (kept in {forecast['file']}):"
    lines = ["", *wrap(head, width)]
    for row in forecast["classes"]:
        low, high = row["forecast"]
        kernel = row.get("kernel")
        alone = (
            f" (Eigen kernel alone {kernel[0]:.2f}-{kernel[1]:.2f}x)"
            if kernel and row.get("level") == "tensorflow"
            else ""
        )
        measured = row["measured"]
        seen = (
            f"measured {measured[0]:.2f}-{measured[1]:.2f}x ({', '.join(row['ops'])})"
            if measured
            else "not measured by smoke"
        )
        text = (
            f"  {CLASSES.get(row['class'], row['class'])}: forecast {low:.2f}-{high:.2f}x"
            f"{alone}, {seen}"
        )
        lines += [("    " if i else "") + line for i, line in enumerate(wrap(text, width, rest=4))]
    typer.echo(printable("\n".join(lines)))
