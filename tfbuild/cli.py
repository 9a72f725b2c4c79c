"""The command line: parse options, call one function per command, print, map errors to exit codes.

No logic lives here. Every command hands its options to a pure function (or a detector) and prints
the result; every failure arrives as a :class:`tfbuild.errors.TfbuildError` and leaves through
:func:`main` as one line and the error's exit code.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tfbuild import __version__
from tfbuild.errors import TfbuildError

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


def _print_json(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


@app.command()
def detect(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON (schema in the README).")
    ] = False,
    cpuinfo: Annotated[
        list[Path] | None,
        typer.Option(
            "--cpuinfo",
            metavar="FILE",
            help="Describe another machine from a saved /proc/cpuinfo. Repeat to get the common "
            "target of several machines.",
            show_default=False,
        ),
    ] = None,
    compiler: Annotated[
        str | None,
        typer.Option(
            "--compiler",
            metavar="SPEC",
            help="Compiler the flags are for, e.g. clang-18 or gcc-12 (a bare name asks PATH). "
            "Default: clang-18.1.8, TensorFlow 2.19-2.21's release compiler.",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            metavar="NAME",
            help="Also show flags for a portable target (x86_64_v3, haswell, ...) and whether it "
            "runs on the machine(s).",
            show_default=False,
        ),
    ] = None,
    why_not: Annotated[
        list[str] | None,
        typer.Option(
            "--why-not",
            metavar="NAME",
            help="Explain whether code built for this target runs on the machine, and why not.",
            show_default=False,
        ),
    ] = None,
    gpu: Annotated[
        bool,
        typer.Option("--gpu/--no-gpu", help="Look for CUDA, cuDNN, NCCL, TensorRT and GPUs."),
    ] = True,
) -> None:
    """Describe a machine: CPU and microarchitecture, TensorFlow's CPU features, compiler flags,
    CUDA and GPUs, resources."""
    from tfbuild.detect.gather import gather

    report = gather(
        cpuinfo_files=tuple(cpuinfo or ()),
        compiler_spec=compiler,
        target=target,
        why_not=tuple(why_not or ()),
        with_gpu=gpu,
    )
    if as_json:
        _print_json(report.to_json())
        return
    from tfbuild.display import print_detect

    print_detect(report)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tfbuild`` console script: the only place that catches errors."""
    _state["debug"] = _debug_from_env() or "--debug" in (argv or sys.argv[1:])
    try:
        app(args=argv, prog_name="tfbuild")
    except TfbuildError as exc:
        if _state["debug"]:
            raise
        sys.stderr.write(f"tfbuild: error: {exc.line()}\n")
        sys.exit(exc.exit_code)
    except Exception as exc:
        if _state["debug"]:
            raise
        sys.stderr.write(
            f"tfbuild: internal error: {type(exc).__name__}: {exc}. "
            "Run again with --debug for the traceback, and please report it.\n"
        )
        sys.exit(1)
