"""``tfbuild smoke``: prove a wheel (no unused-instruction message, faster than stock); also the
canary's stand-in, an overlay, and ``--in-image`` (does it load on another system)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tfbuild.cli.forecast import print_forecast_beside
from tfbuild.cli.options import takes
from tfbuild.cli.output import print_json, progressing
from tfbuild.core import serial
from tfbuild.core.options import BUDGET, INSTALLED, JSON, WHEEL, Cli, group, option
from tfbuild.core.pythons import PYTHON_INTERPRETER
from tfbuild.measure.models import ModelOptions


def _ops(text: str) -> tuple[str, ...]:
    return tuple(o.strip() for o in text.split(",") if o.strip())


@dataclass(frozen=True, kw_only=True)
class SmokeArgs:
    """What ``tfbuild smoke`` was asked."""

    wheel: str | None = option(WHEEL, default=None)
    installed: bool = option(INSTALLED, default=False)
    python: str = option(PYTHON_INTERPRETER, default=sys.executable)
    baseline: str | None = option(
        Cli(
            flags=("--baseline",),
            metavar="SPEC",
            help="What to compare with: a .whl, a requirement, or 'none'. Default: the stock "
            "tensorflow-cpu of the same version.",
            show_default=False,
        ),
        default=None,
    )
    quick: bool = option(
        Cli(flags=("--quick",), help="Shorter measurements for CI (under 2 minutes)."),
        default=False,
    )
    budget: float | None = option(
        BUDGET.but(help=f"{BUDGET.help} Default: 90 with --quick, else 300.", show_default=False),
        default=None,
    )
    bench: bool = option(
        Cli(flags=("--bench/--no-bench",), help="Benchmark, or only probe the import."),
        default=True,
    )
    settings: bool = option(
        Cli(flags=("--settings/--no-settings",), help="Try TCMalloc, thread and OpenMP settings."),
        default=True,
    )
    env_file: Path | None = option(
        Cli(
            flags=("--env-file",),
            metavar="FILE",
            help="The wheel's runtime env file: read, then updated.",
            show_default=False,
        ),
        default=None,
    )
    allow_unused: bool = option(
        Cli(
            flags=("--allow-unused",),
            help="Pass even if TensorFlow names unused instructions.",
        ),
        default=False,
    )
    allow_slower: tuple[str, ...] = option(
        Cli(
            flags=("--allow-slower",),
            metavar="OPS",
            help="Comma-separated ops allowed to be slower.",
            show_default=False,
            cli_type=str | None,
            convert=_ops,
        ),
        default=(),
    )
    min_margin: float = option(
        Cli(
            flags=("--min-margin",), min=0.0, max=1.0, help="Smallest difference called a verdict."
        ),
        default=0.05,
    )
    as_json: bool = option(JSON, default=False)
    plot: Path | None = option(
        Cli(
            flags=("--plot",),
            metavar="FILE.png",
            help="Draw candidate vs baseline per op.",
            show_default=False,
        ),
        default=None,
    )
    model: ModelOptions = group(ModelOptions)
    in_image: tuple[str, ...] = option(
        Cli(
            flags=("--in-image",),
            metavar="IMAGE",
            help="Instead: does the wheel's native code load on another system? Its loader is "
            "asked in a container of IMAGE (e.g. tfbuild/base:bullseye, made by tfbuild base). "
            "Repeat for several.",
            show_default=False,
        ),
        default=(),
    )
    wheelhouse: Path | None = option(
        Cli(
            flags=("--wheelhouse",),
            metavar="DIR",
            help="With --in-image: the dependencies' wheels (pip download -d DIR ...), installed "
            "offline with the image's pip before the import.",
            show_default=False,
        ),
        default=None,
    )


@takes(SmokeArgs)
def smoke_command(request: SmokeArgs) -> None:
    """Prove a wheel: no unused-instruction complaint at import, and faster than the stock wheel."""
    from tfbuild.core.errors import SmokeFailed, UsageError
    from tfbuild.smoke.loads import check_in_image_request
    from tfbuild.wheel.overlay_receipt import is_overlay_wheel

    wheel = request.wheel
    check_in_image_request(wheel, list(request.in_image), request.wheelhouse)
    overlay = wheel is not None and not request.in_image and is_overlay_wheel(Path(wheel))
    if request.model.model is not None and not overlay:
        raise UsageError(
            "smoke --model profiles and times your model with an overlay and without",
            fix="Pass an overlay wheel (tfbuild_overlay-*.whl); for any other wheel, "
            "tfbuild tune WHEEL --model PATH measures what makes your model fastest.",
        )
    if overlay:
        from tfbuild.cli.overlay import smoke_overlay

        assert wheel is not None
        smoke_overlay(
            Path(wheel),
            python=request.python,
            quick=request.quick,
            budget=request.budget,
            bench=request.bench,
            as_json=request.as_json,
            model=request.model.checked(),
        )
        return
    if request.in_image and wheel is not None:  # checked: --in-image has a .whl file
        _smoke_in_images(
            wheel, list(request.in_image), wheelhouse=request.wheelhouse, as_json=request.as_json
        )
        return
    from tfbuild.smoke.standin import is_standin_wheel

    if wheel is not None and is_standin_wheel(Path(wheel)):  # the canary: not TensorFlow
        _smoke_standin(
            Path(wheel), python=request.python, bench=request.bench, as_json=request.as_json
        )
        return
    from tfbuild.smoke.report import Rules, check_plot
    from tfbuild.smoke.session import SmokeOptions, run_smoke, with_wheel_files

    options = SmokeOptions(
        wheel=wheel,
        installed=request.installed,
        python=request.python,
        baseline=request.baseline,
        quick=request.quick,
        budget=request.budget,
        bench=request.bench,
        settings=request.settings,
        rules=Rules(
            allow_unused=request.allow_unused,
            allow_slower=request.allow_slower,
            min_margin=request.min_margin,
        ),
        env_file=request.env_file,
    )
    if request.plot is not None:
        check_plot()
    options = with_wheel_files(options)

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


def _smoke_standin(wheel: Path, *, python: str, bench: bool, as_json: bool) -> None:
    """``smoke`` of the canary's STAND-IN wheel: installed, imported and run as what it is, its
    flags checked (recorded, and in its machine code); exit 7 when it does not work."""
    from tfbuild.core.errors import SmokeFailed
    from tfbuild.smoke.standin import run_standin_smoke

    with progressing("smoke", quiet=as_json) as say:
        report = run_standin_smoke(wheel, python=python, say=say)
    if as_json:
        print_json(serial.to_data(report))
    else:
        from tfbuild.cli.wheel_display import print_standin_smoke

        print_standin_smoke(report, bench=bench)
    if not report.passed:
        raise SmokeFailed(
            f"{wheel.name} (the STAND-IN canary) did not pass", why="; ".join(report.failures)
        )


def _smoke_in_images(
    wheel: str, images: list[str], *, wheelhouse: Path | None, as_json: bool
) -> None:
    """``smoke --in-image``: load the wheel's libraries with each image's own loader, check its
    tags and requirements against the image's Python and import it there."""
    from tfbuild.smoke.loads import loads_failure, loads_in_images

    reports = loads_in_images(Path(wheel), images, wheelhouse=wheelhouse)
    if as_json:
        print_json({"schema": "tfbuild.loads/1", "wheel": wheel, "images": serial.to_data(reports)})
    else:
        from tfbuild.cli.wheel_display import print_loads

        print_loads(Path(wheel), reports)
    failure = loads_failure(Path(wheel), reports)
    if failure is not None:
        raise failure
