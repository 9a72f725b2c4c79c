"""The ``tfbuild tune`` command: measure a wheel's runtime settings, keep what wins, print it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tfbuild.core.errors import printable

if TYPE_CHECKING:
    from tfbuild.smoke.tune import TuneReport


def tune_command(
    wheel: Annotated[
        str | None,
        typer.Argument(
            help="A .whl file, or a requirement such as tensorflow-cpu==2.21.0.", show_default=False
        ),
    ] = None,
    installed: Annotated[
        bool, typer.Option("--installed", help="Tune the TensorFlow of the --python interpreter.")
    ] = False,
    python: Annotated[
        str | None,
        typer.Option("--python", metavar="PATH", help="Interpreter for the test environments."),
    ] = None,
    budget: Annotated[
        float,
        typer.Option("--budget", metavar="SECONDS", min=1.0, help="Time for the search."),
    ] = 300.0,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            metavar="FILE",
            help="Where to write the profile (default: the wheel's env file, <wheel>.env).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        Path | None,
        typer.Option(
            "--model",
            metavar="PATH",
            help=(
                "Time your model too, as one more op (model:NAME) under each setting: a SavedModel "
                "directory (its 'serving_default' signature) or a Keras v3 .keras file (loaded with "
                "safe_mode=True, so no Lambda layers). A SavedModel runs its own graph: pass only "
                "models you trust."
            ),
            show_default=False,
        ),
    ] = None,
    model_batch: Annotated[
        int,
        typer.Option(
            "--model-batch",
            metavar="N",
            min=1,
            max=4096,
            help="The batch given to the model's inputs whose first dimension is open.",
        ),
    ] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Measure the runtime settings that matter for a wheel here; keep those that win."""
    from tfbuild.core.errors import UsageError
    from tfbuild.smoke.models import check_model
    from tfbuild.smoke.session import wheel_to_test
    from tfbuild.smoke.tune import TuneOptions, run_tune, write_profile

    interpreter = python or sys.executable
    if installed == (wheel is not None):
        raise UsageError(
            "tune needs one wheel: a WHEEL argument or --installed",
            fix="Name a .whl or a requirement, or pass --installed (with --python PATH).",
        )
    timed_model = check_model(model, batch=model_batch) if model is not None else None
    spec = wheel_to_test(wheel, installed=installed, python=interpreter)
    target = output or (Path(spec.value).with_suffix(".env") if spec.kind == "file" else None)

    def progress(message: str) -> None:
        if not as_json:
            sys.stderr.write(f"[tune] {printable(message)}\n")

    options = TuneOptions(spec=spec, python=interpreter, budget=budget, model=timed_model)
    report = run_tune(options, progress=progress)
    if target is not None:
        write_profile(target, report)
    if as_json:
        data = report.to_json() | {"written": str(target) if target else None}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    print_tune(report, target)


def print_tune(report: TuneReport, written: Path | None) -> None:
    """What tune kept and why, a line each (each trial's under its word): wrapped to the terminal
    when standard output is one, every line whole when it is piped."""
    from tfbuild.cli.text import terminal_width
    from tfbuild.core.stats import UNDECIDED
    from tfbuild.smoke.tune import gain

    kept = ", ".join(t.name for t in report.kept) or "nothing (TensorFlow's defaults stay)"
    note = report.undecided_note()
    lines = [(f"undecided: {note}", 2)] if note else []  # first: it qualifies all that follows
    lines.append((f"kept for {report.wheel}: {kept} ({report.seconds:.0f} s)", 2))
    if report.model is not None:
        per_call = report.model_seconds()
        took = f", {per_call * 1e3:.3g} ms a call with the defaults" if per_call else ""
        lines.append(
            (
                f"  timed {report.model.op} beside the smoke's ops (batch {report.model.batch}"
                f"{took})",
                4,
            )
        )
    if report.confirmation is not None:
        median, low, high = gain(report.confirmation)
        verdict = "confirmed" if report.confirmation.wins else "not confirmed"
        lines.append(
            (
                f"  together against the defaults: {median:.2f}x ({low:.2f}-{high:.2f}x), {verdict}",
                4,
            )
        )
    for trial in report.tried:
        median, low, high = gain(trial)
        word = (
            "kept"
            if trial in report.kept
            else "undecided"
            if trial.outcome == UNDECIDED
            else "rejected"
        )
        ops = ", ".join(f"{r.op} {r.verdict.label}" for r in trial.results if r.verdict)
        lines.append(
            (f"  {word:<10}{trial.name}: {median:.2f}x ({low:.2f}-{high:.2f}x; {ops})", 12)
        )
    lines.extend((f"  not tried {name} (the --budget ran out)", 4) for name in report.not_tried)
    if report.machine is not None:
        lines.append((f"machine: {report.machine.describe()}", 2))
    lines.append(
        (
            f"profile written to {written}"
            if written is not None
            else "profile not written: pass --output FILE (a requirement has no env file)",
            2,
        )
    )
    width = terminal_width(sys.stdout)
    shown = [row for text, indent in lines for row in _indented(text, width, indent)]
    typer.echo(printable("\n".join(shown)))


def _indented(text: str, width: int | None, indent: int) -> list[str]:
    """``text`` (its own leading spaces kept) wrapped under column ``indent``."""
    from tfbuild.cli.text import hanging

    lead = len(text) - len(text.lstrip(" "))
    rows = hanging(text.lstrip(" "), None if width is None else width - lead, indent=indent - lead)
    return [" " * lead + row for row in rows]
