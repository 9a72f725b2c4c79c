"""The command line: the app, its commands in --help order, and :func:`main`, which maps errors to exit codes.

No logic lives in the command line. Every command (in :mod:`~tfbuild.cli.plan_commands`,
:mod:`~tfbuild.cli.build_commands` or :mod:`~tfbuild.cli.wheel_commands`) hands its options, as
one typed value, to a function of the layers below (a planner, a build run, a detector) and prints
the result (:mod:`~tfbuild.cli.display`, :mod:`~tfbuild.cli.wheel_display`,
:mod:`~tfbuild.cli.output`); every failure arrives as a :class:`tfbuild.core.errors.TfbuildError`
and leaves through :func:`main` as one line and the error's exit code. The plan options that
``plan``, ``render`` and ``wheel`` share are declared once, on the fields of
:class:`tfbuild.plan.options.PlanOptions` (:mod:`~tfbuild.cli.plan_options` makes them typer
options), and reach each command as one PlanOptions.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from tfbuild import __version__
from tfbuild.cli import build_commands, plan_commands, wheel_commands
from tfbuild.cli.forecast_command import forecast_command
from tfbuild.cli.overlay_command import overlay_command
from tfbuild.cli.plan_options import PlanCommand
from tfbuild.cli.tune_command import tune_command
from tfbuild.core.errors import TfbuildError, printable

app = typer.Typer(
    name="tfbuild",
    help="Build TensorFlow wheels optimized for the machines they run on.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state: dict[str, bool] = {"debug": False}


def _debug_from_env() -> bool:
    return os.environ.get("TFBUILD_DEBUG", "") not in ("", "0", "false", "no")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tfbuild {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks (also TFBUILD_DEBUG=1).")
    ] = False,
) -> None:
    """Build TensorFlow wheels optimized for the machines they run on."""
    _state["debug"] = debug or _debug_from_env()


# The commands, in the order --help lists them; each lives in the module of its kind.
app.command()(plan_commands.detect)
app.command("matrix")(plan_commands.matrix_command)
app.command("plan", cls=PlanCommand)(plan_commands.plan_command)
app.command("forecast", cls=PlanCommand)(forecast_command)
app.command("render", cls=PlanCommand)(plan_commands.render_command)
app.command("wheel", cls=PlanCommand)(build_commands.wheel_command)
app.command("doctor")(build_commands.doctor_command)
app.command("overlay")(overlay_command)
app.command("verify")(build_commands.verify_command)
app.command("smoke")(wheel_commands.smoke_command)
app.command("tune")(tune_command)
app.command("base")(build_commands.base_command)
app.command("index")(wheel_commands.index_command)
app.command("pick")(wheel_commands.pick_command)
app.add_typer(plan_commands.recipes_app, name="recipes")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tfbuild`` console script: the only place that catches errors."""
    _state["debug"] = _debug_from_env() or "--debug" in (argv or sys.argv[1:])
    try:
        app(args=argv, prog_name="tfbuild")
    except TfbuildError as exc:
        if _state["debug"]:
            raise
        for detail in exc.details:
            sys.stderr.write(f"  | {printable(detail)}\n")
        sys.stderr.write(f"tfbuild: error: {exc.line()}\n")  # line(): printable already
        if exc.hint:
            sys.stderr.write(f"tfbuild: hint: {exc.hint}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        if _state["debug"]:
            raise
        sys.stderr.write("tfbuild: interrupted: everything tfbuild started was stopped.\n")
        sys.exit(130)
    except Exception as exc:
        if _state["debug"]:
            raise
        sys.stderr.write(
            f"tfbuild: internal error: {type(exc).__name__}: {printable(str(exc))}. "
            "Run again with --debug for the traceback, and please report it.\n"
        )
        sys.exit(1)
