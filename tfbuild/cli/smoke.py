"""``tfbuild smoke``: prove a wheel (no unused-instruction message, faster than stock); also the
canary's stand-in, an overlay, and ``--in-image`` (does it load on another system)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.forecast import print_forecast_beside
from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data, print_json, progressing
from tfbuild.core import serial
from tfbuild.core.errors import SmokeFailed, UsageError
from tfbuild.core.options import JSON, declared, group, option
from tfbuild.measure.models import ModelOptions
from tfbuild.smoke.options import SmokeOptions


@dataclass(frozen=True, kw_only=True)
class SmokeArgs:
    """What ``tfbuild smoke`` was asked: a TensorFlow wheel's smoke options, and the command's."""

    smoke: SmokeOptions = group(SmokeOptions)
    as_json: bool = option(JSON, default=False)
    plot: Path | None = declared(
        None, "--plot", metavar="FILE.png", help="Draw candidate vs baseline per op."
    )
    model: ModelOptions = group(ModelOptions)
    in_image: tuple[str, ...] = declared(
        (),
        "--in-image",
        metavar="IMAGE",
        help="Instead: does the wheel's native code load on another system? Its loader is "
        "asked in a container of IMAGE (e.g. tfbuild/base:bullseye, made by tfbuild base). "
        "Repeat for several.",
    )
    wheelhouse: Path | None = declared(
        None,
        "--wheelhouse",
        metavar="DIR",
        help="With --in-image: the dependencies' wheels (pip download -d DIR ...), installed "
        "offline with the image's pip before the import.",
    )


@takes(SmokeArgs)
def smoke_command(request: SmokeArgs) -> None:
    """Prove a wheel: no unused-instruction complaint at import, and faster than the stock wheel."""
    from tfbuild.smoke.loads import check_in_image_request
    from tfbuild.wheel.overlay_receipt import is_overlay_wheel

    wheel = request.smoke.wheel
    check_in_image_request(wheel, list(request.in_image), request.wheelhouse)
    overlay = wheel is not None and not request.in_image and is_overlay_wheel(Path(wheel))
    if request.model.model is not None and not overlay:
        raise UsageError(
            "smoke --model profiles and times your model with an overlay and without",
            fix="Pass an overlay wheel (tfbuild_overlay-*.whl); for any other wheel, "
            "tfbuild tune WHEEL --model PATH measures what makes your model fastest.",
        )
    if overlay and wheel is not None:
        _smoke_overlay(Path(wheel), request)
        return
    if request.in_image and wheel is not None:  # checked: --in-image has a .whl file
        _smoke_in_images(Path(wheel), request)
        return
    from tfbuild.smoke.standin import is_standin_wheel

    if wheel is not None and is_standin_wheel(Path(wheel)):  # the canary: not TensorFlow
        _smoke_standin(Path(wheel), request)
        return
    from tfbuild.smoke.report import check_plot
    from tfbuild.smoke.session import run_smoke, with_wheel_files

    request.smoke.check()
    if request.plot is not None:
        check_plot()
    options = with_wheel_files(request.smoke)

    with progressing("smoke", quiet=request.as_json) as say:
        report = run_smoke(options, progress=say)
    if request.plot is not None and report.results:
        from tfbuild.smoke.report import plot

        plot(report, request.plot)
    if request.as_json:
        print_json(report.to_json())
    else:
        from tfbuild.cli.wheel_display import print_smoke

        print_smoke(report)
        print_forecast_beside(report.forecast)
    if not report.passed:
        raise SmokeFailed(f"{report.candidate_label} did not pass", why="; ".join(report.failures))


def _smoke_overlay(wheel: Path, request: SmokeArgs) -> None:
    """``tfbuild smoke OVERLAY.whl``: each replaced op and control, then whole models (the user's
    ``--model`` when given), overlay against stock."""
    from tfbuild.overlay.prove import prove_overlay

    model = request.model.checked()
    with progressing("smoke", quiet=request.as_json) as progress:
        proof = prove_overlay(
            wheel,
            python=request.smoke.python,
            quick=request.smoke.quick,
            budget=request.smoke.budget,
            bench=request.smoke.bench,
            model=model,
            progress=progress,
        )
    if request.as_json:
        print_json(serial.to_data(proof) | {"schema": "tfbuild.overlay-smoke/1"})
    else:
        from tfbuild.cli.overlay import print_overlay_smoke

        print_overlay_smoke(proof)
    if proof.slower:
        raise SmokeFailed(
            f"the overlay {proof.wheel} is slower than stock",
            why=f"on {', '.join(proof.slower)}",
            fix="Report it with the receipt; meanwhile pip uninstall tfbuild-overlay.",
        )


def _smoke_standin(wheel: Path, request: SmokeArgs) -> None:
    """``smoke`` of the canary's STAND-IN wheel: installed, imported and run as what it is, its
    flags checked (recorded, and in its machine code); exit 7 when it does not work."""
    from tfbuild.smoke.standin import run_standin_smoke

    with progressing("smoke", quiet=request.as_json) as say:
        report = run_standin_smoke(wheel, python=request.smoke.python, say=say)
    if request.as_json:
        print_data(report)
    else:
        from tfbuild.cli.wheel_display import print_standin_smoke

        print_standin_smoke(report, bench=request.smoke.bench)
    if not report.passed:
        raise SmokeFailed(
            f"{wheel.name} (the STAND-IN canary) did not pass", why="; ".join(report.failures)
        )


def _smoke_in_images(wheel: Path, request: SmokeArgs) -> None:
    """``smoke --in-image``: load the wheel's libraries with each image's own loader, check its
    tags and requirements against the image's Python and import it there."""
    from tfbuild.smoke.loads import loads_failure, loads_in_images

    reports = loads_in_images(wheel, list(request.in_image), wheelhouse=request.wheelhouse)
    if request.as_json:
        print_data({"schema": "tfbuild.loads/1", "wheel": request.smoke.wheel, "images": reports})
    else:
        from tfbuild.cli.wheel_display import print_loads

        print_loads(wheel, reports)
    if (failure := loads_failure(wheel, reports)) is not None:
        raise failure
