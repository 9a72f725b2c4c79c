"""The command line: the app, its commands in --help order, and :func:`main`, which maps errors
to exit codes.

No logic lives in the command line. Every command (each in the module of its name) hands its
options, as one typed request (:mod:`~tfbuild.cli.options`), to a function of the layers below and
prints the result; every failure arrives as a :class:`tfbuild.core.errors.TfbuildError` and leaves
through :func:`main` as one line and the error's exit code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, NoReturn

import typer

from tfbuild import __version__
from tfbuild.cli.base import base_command
from tfbuild.cli.cache import cache_command
from tfbuild.cli.detect import detect_command
from tfbuild.cli.doctor import doctor_command
from tfbuild.cli.forecast import forecast_command
from tfbuild.cli.index import index_command
from tfbuild.cli.matrix import matrix_command
from tfbuild.cli.options import parsing
from tfbuild.cli.overlay import overlay_command
from tfbuild.cli.pick import pick_command
from tfbuild.cli.plan import plan_command
from tfbuild.cli.recipes import recipes_app
from tfbuild.cli.render import render_command
from tfbuild.cli.smoke import smoke_command
from tfbuild.cli.tune import tune_command
from tfbuild.cli.usage import CommandLineError, NoArgsIsHelp, as_usage_error
from tfbuild.cli.verify import verify_command
from tfbuild.cli.wheel import wheel_command
from tfbuild.core.controls import printable
from tfbuild.core.errors import TfbuildError

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


# The commands, in the order --help lists them; each lives in the module of its name, and takes
# one request, declared once as a dataclass (tfbuild.cli.options). Each has its one-line summary
# here, short enough for the list of an 80-column --help (click would cut a longer first sentence of
# the docstring with "..."); the docstring is the command's own --help.
_COMMANDS = (
    ("detect", detect_command, "Describe a machine: CPU, TensorFlow's CPU features, flags, GPUs"),
    ("matrix", matrix_command, "The CI build matrix: TensorFlow x Python x target x variant"),
    ("plan", plan_command, "Every choice of a build, one line each (--why: with its reason)"),
    ("forecast", forecast_command, "What a build would gain over the stock wheel, before building"),
    ("render", render_command, "Write the build context (Dockerfile, rc, build.sh, env, plan)"),
    ("wheel", wheel_command, "Build the wheel in Docker: wheel, receipt and env file in dist/"),
    ("doctor", doctor_command, "Check this machine, then prove the pipeline with a canary"),
    ("overlay", overlay_command, "A wheel of stock TensorFlow's element-wise kernels for this CPU"),
    ("verify", verify_command, "Rebuild a wheel from its receipt; check it byte for byte"),
    ("smoke", smoke_command, "Prove a wheel: no unused-instruction message, faster than stock"),
    ("tune", tune_command, "Measure a wheel's runtime settings here; keep those that win"),
    ("base", base_command, "Make a base image with debootstrap (no registry needed)"),
    ("index", index_command, "Write index.html (a pip --find-links page) and SHA256SUMS"),
    ("pick", pick_command, "Choose the wheel (or overlay) that runs best here; install it"),
    ("cache", cache_command, "What tfbuild keeps here, its size and age; --prune frees it"),
)
for _name, _command, _summary in _COMMANDS:
    app.command(_name, short_help=_summary)(_command)
app.add_typer(
    recipes_app,
    name="recipes",
    short_help="The TensorFlow releases tfbuild can build, one recipe each",
)


def request_of(argv: Sequence[str]) -> Any:
    """The request ``tfbuild ARGV`` hands to its command, made and checked as a run makes it,
    with nothing run: a bad value raises the UsageError the run says (click's own usage errors,
    an option's bound among them, in tfbuild's words, as :func:`main` says them)."""
    with parsing() as made:
        try:
            app(args=list(argv), prog_name="tfbuild", standalone_mode=False)
        except CommandLineError as exc:
            raise as_usage_error(exc, argv) from None
    if not made:
        raise LookupError(f"tfbuild {' '.join(argv)} made no request")
    return made[-1]


def _say(tag: str, text: str) -> None:
    """One ``tfbuild: TAG: ...`` line on stderr: whole when stderr is piped (scripts read it as one
    line), wrapped to the terminal's width, further lines two columns in, when it is a terminal."""
    from tfbuild.core.text import hanging, terminal_width

    for line in hanging(f"tfbuild: {tag}: {text}", terminal_width(sys.stderr)):
        sys.stderr.write(line + "\n")


def _refuse(exc: TfbuildError) -> NoReturn:
    for detail in exc.details:  # a build log's lines: verbatim, never wrapped
        sys.stderr.write(f"  | {printable(detail)}\n")
    _say("error", exc.line())  # line(): printable already
    if exc.hint:
        _say("hint", exc.hint)
    sys.exit(exc.exit_code)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tfbuild`` console script: the only place that catches errors."""
    _state["debug"] = _debug_from_env() or "--debug" in (argv or sys.argv[1:])
    try:
        # Not standalone: click's usage errors come here, to be said as tfbuild says its own.
        code = app(args=argv, prog_name="tfbuild", standalone_mode=False)
    except NoArgsIsHelp as exc:  # bare tfbuild: the help, as click gives it
        exc.show()
        sys.exit(exc.exit_code)
    except (Exception, KeyboardInterrupt) as exc:
        if _state["debug"]:
            raise
        if isinstance(exc, TfbuildError):
            _refuse(exc)
        if isinstance(exc, CommandLineError):
            _refuse(as_usage_error(exc, sys.argv[1:] if argv is None else argv))
        if isinstance(exc, KeyboardInterrupt):
            sys.stderr.write("tfbuild: interrupted: everything tfbuild started was stopped.\n")
            sys.exit(130)
        sys.stderr.write(
            f"tfbuild: internal error: {type(exc).__name__}: {printable(str(exc))}. "
            "Run again with --debug for the traceback, and please report it.\n"
        )
        sys.exit(1)
    if isinstance(code, int) and code:  # an exit code typer returns instead of exiting (130)
        sys.exit(code)
