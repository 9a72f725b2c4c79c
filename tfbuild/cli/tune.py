"""The ``tfbuild tune`` command: measure a wheel's runtime settings, keep what wins, print it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfbuild.cli.options import takes
from tfbuild.cli.output import echo_hanging, print_json, progress
from tfbuild.cli.tune_model import MODEL_BUDGET, tune_a_model
from tfbuild.core.heartbeat import Heartbeat
from tfbuild.core.options import BUDGET, INSTALLED, JSON, WHEEL, declared, group, option
from tfbuild.core.pythons import PYTHON_INTERPRETER
from tfbuild.measure.models import ModelOptions

#: Seconds tune measures a wheel's settings on the smoke's ops by default.
DEFAULT_BUDGET = 300.0

if TYPE_CHECKING:
    from tfbuild.measure.tune import TuneReport


@dataclass(frozen=True, kw_only=True)
class TuneArgs:
    """What ``tfbuild tune`` was asked (the wheel, --installed and --python as smoke takes them)."""

    wheel: str | None = option(WHEEL, default=None)
    installed: bool = option(INSTALLED, default=False)
    python: str = option(PYTHON_INTERPRETER, default=sys.executable)
    budget: float | None = option(
        BUDGET.but(
            help=f"{BUDGET.help} Default: {DEFAULT_BUDGET:.0f}, {MODEL_BUDGET:.0f} with --model."
        ),
        default=None,
    )
    env_file: Path | None = declared(
        None,
        "--env-file",
        metavar="FILE",
        help="The runtime env file the profile is written to (default: <wheel>.env beside a "
        "wheel file; with --model, <model>.env beside the model).",
    )
    model: ModelOptions = group(ModelOptions)
    overlay: str | None = declared(
        None,
        "--overlay-wheel",
        metavar="WHEEL|build|none",
        help="With --model, the overlay measured as a lever: a wheel tfbuild overlay made, "
        "'build' (one built here for this CPU, with the host's clang, into dist/), or 'none'. "
        "Default: the one installed in the tuned TensorFlow, if any.",
    )
    as_json: bool = option(JSON, default=False)


@takes(TuneArgs)
def tune_command(args: TuneArgs) -> None:
    """Measure what makes a wheel, or your model on it (--model), fastest here; keep what wins."""
    from tfbuild.core.errors import UsageError
    from tfbuild.measure.tune import TuneOptions, run_tune, write_profile
    from tfbuild.smoke.session import wheel_to_test

    interpreter, wheel, as_json = args.python, args.wheel, args.as_json
    if args.installed == (wheel is not None):
        raise UsageError(
            "tune needs one wheel: a WHEEL argument or --installed",
            fix="Name a .whl or a requirement, or pass --installed (with --python PATH).",
        )
    if args.overlay is not None and args.model.model is None:
        raise UsageError(
            "--overlay-wheel is a lever measured on a model",
            fix="Pass --model PATH too, or drop it.",
        )
    timed_model = args.model.checked()
    spec = wheel_to_test(wheel, installed=args.installed, python=interpreter)
    say = progress("tune", quiet=as_json)
    if timed_model is not None:
        tune_a_model(
            spec,
            timed_model,
            python=interpreter,
            budget=MODEL_BUDGET if args.budget is None else args.budget,
            env_file=args.env_file,
            overlay=args.overlay,
            as_json=as_json,
            say=say,
        )
        return
    target = args.env_file or (
        Path(spec.value).with_suffix(".env") if spec.kind == "file" else None
    )
    budget = DEFAULT_BUDGET if args.budget is None else args.budget
    with Heartbeat(say) as beat:
        report = run_tune(TuneOptions(spec=spec, python=interpreter, budget=budget), progress=beat)
    if target is not None:
        write_profile(target, report)
    if as_json:
        print_json(report.to_json() | {"written": str(target) if target else None})
        return
    print_tune(report, target)


def print_tune(report: TuneReport, written: Path | None) -> None:
    """What tune kept and why, a line each (each trial's under its word): wrapped to the terminal
    when standard output is one, every line whole when it is piped."""
    from tfbuild.core.stats import UNDECIDED
    from tfbuild.measure.tune import gain

    kept = ", ".join(t.name for t in report.kept) or "nothing (TensorFlow's defaults stay)"
    note = report.undecided_note()
    lines = [(f"undecided: {note}", 2)] if note else []  # first: it qualifies all that follows
    lines.append((f"kept for {report.wheel}: {kept} ({report.seconds:.0f} s)", 2))
    if report.confirmation is not None:
        median, low, high = gain(report.confirmation)
        verdict = "confirmed" if report.confirmation.wins else "not confirmed"
        together = f"together against the defaults: {median:.2f}x ({low:.2f}-{high:.2f}x)"
        lines.append((f"  {together}, {verdict}", 4))
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
    if written is not None:
        lines.append((f"profile written to {written}", 2))
    else:
        lines.append(
            ("profile not written: pass --env-file FILE (a requirement has no env file)", 2)
        )
    echo_hanging(lines)
