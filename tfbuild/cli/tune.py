"""The ``tfbuild tune`` command: measure a wheel's runtime settings, keep what wins, print it."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tfbuild.cli.options import takes
from tfbuild.core.controls import printable
from tfbuild.core.options import BUDGET, INSTALLED, JSON, WHEEL, Cli, option
from tfbuild.core.pythons import PYTHON_INTERPRETER
from tfbuild.measure.models import MAX_BATCH

if TYPE_CHECKING:
    from tfbuild.measure.tune import TuneReport


@dataclass(frozen=True, kw_only=True)
class TuneArgs:
    """What ``tfbuild tune`` was asked (the wheel, --installed and --python as smoke takes them)."""

    wheel: str | None = option(WHEEL, default=None)
    installed: bool = option(INSTALLED, default=False)
    python: str = option(PYTHON_INTERPRETER, default=sys.executable)
    budget: float = option(BUDGET, default=300.0)
    env_file: Path | None = option(
        Cli(
            flags=("--env-file",),
            metavar="FILE",
            help="The wheel's runtime env file, where the profile is written (default: "
            "<wheel>.env beside a wheel file).",
            show_default=False,
        ),
        default=None,
    )
    model: Path | None = option(
        Cli(
            flags=("--model",),
            metavar="PATH",
            help=(
                "Time your model too, as one more op (model:NAME) under each setting: a SavedModel "
                "directory (its 'serving_default' signature) or a Keras v3 .keras file (loaded with "
                "safe_mode=True, so no Lambda layers). A SavedModel runs its own graph: pass only "
                "models you trust."
            ),
            show_default=False,
        ),
        default=None,
    )
    model_batch: int = option(
        Cli(
            flags=("--model-batch",),
            metavar="N",
            min=1,
            max=MAX_BATCH,
            help="The batch given to the model's inputs whose first dimension is open.",
        ),
        default=1,
    )
    as_json: bool = option(JSON, default=False)


@takes(TuneArgs)
def tune_command(args: TuneArgs) -> None:
    """Measure the runtime settings that matter for a wheel here; keep those that win."""
    from tfbuild.core.errors import UsageError
    from tfbuild.measure.models import check_model
    from tfbuild.measure.tune import TuneOptions, run_tune, write_profile
    from tfbuild.smoke.session import wheel_to_test

    interpreter, wheel, as_json = args.python, args.wheel, args.as_json
    if args.installed == (wheel is not None):
        raise UsageError(
            "tune needs one wheel: a WHEEL argument or --installed",
            fix="Name a .whl or a requirement, or pass --installed (with --python PATH).",
        )
    model = args.model
    timed_model = check_model(model, batch=args.model_batch) if model is not None else None
    spec = wheel_to_test(wheel, installed=args.installed, python=interpreter)
    target = args.env_file or (
        Path(spec.value).with_suffix(".env") if spec.kind == "file" else None
    )

    def progress(message: str) -> None:
        if not as_json:
            sys.stderr.write(f"[tune] {printable(message)}\n")

    options = TuneOptions(spec=spec, python=interpreter, budget=args.budget, model=timed_model)
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
    from tfbuild.measure.tune import gain

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
            else "profile not written: pass --env-file FILE (a requirement has no env file)",
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
