"""``tfbuild doctor``: check this machine for a build, then prove the pipeline with the canary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_json, progressing
from tfbuild.core.defaults import DOCTOR_TIMES
from tfbuild.core.options import DIST, JSON, VERBOSE, Cli, option


@dataclass(frozen=True, kw_only=True)
class DoctorArgs:
    """What ``tfbuild doctor`` was asked."""

    canary: bool = option(
        Cli(
            flags=("--canary/--no-canary",),
            help=f"Build the stand-in canary through the whole pipeline ({DOCTOR_TIMES}).",
        ),
        default=True,
    )
    dist: Path | None = option(
        DIST.but(
            help="Keep the canary wheels, receipts and logs here (default: a temporary directory).",
            show_default=False,
        ),
        default=None,
    )
    verbose: bool = option(VERBOSE, default=False)
    as_json: bool = option(JSON, default=False)


@takes(DoctorArgs)
def doctor_command(request: DoctorArgs) -> None:
    """Check this machine for a TensorFlow build, then prove the pipeline with the canary."""
    from tfbuild.build.doctor import run_doctor
    from tfbuild.cli.display import print_doctor_check

    with progressing("doctor", quiet=request.as_json) as say:
        report = run_doctor(
            with_canary=request.canary,
            dist=request.dist,
            say=say,
            show=(lambda _check: None) if request.as_json else print_doctor_check,
            verbose=request.verbose and not request.as_json,
            quiet=request.as_json,
        )
    if request.as_json:
        from tfbuild.core import serial

        print_json(serial.to_data(report))
    failure = report.failure()
    if failure is not None:
        raise failure
