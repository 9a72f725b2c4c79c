"""``tfbuild doctor``: check this machine for a build, then prove the pipeline with the canary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data, progressing
from tfbuild.core.defaults import DOCTOR_TIMES
from tfbuild.core.options import DIST, JSON, VERBOSE, declared, option


@dataclass(frozen=True, kw_only=True)
class DoctorArgs:
    canary: bool = declared(
        True,
        "--canary/--no-canary",
        help=f"Build the stand-in canary through the whole pipeline ({DOCTOR_TIMES}).",
    )
    dist: Path | None = option(
        DIST.but(
            help="Keep the canary wheels, receipts and logs here (default: a temporary directory)."
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
        print_data(report)
    if (failure := report.failure()) is not None:
        raise failure
