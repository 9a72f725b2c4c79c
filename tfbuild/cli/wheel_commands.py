"""The commands on finished wheels: smoke, index and pick."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from tfbuild.cli.forecast_command import print_forecast_beside
from tfbuild.cli.output import print_index, print_json, progress
from tfbuild.core import serial
from tfbuild.core.defaults import PICK_TIMEOUT_S
from tfbuild.core.errors import printable
from tfbuild.core.variants import Variant

# --- smoke -------------------------------------------------------------------------------------------


def smoke_command(
    wheel: Annotated[
        str | None,
        typer.Argument(
            help="A .whl file, or a requirement such as tensorflow-cpu==2.21.0.", show_default=False
        ),
    ] = None,
    installed: Annotated[
        bool, typer.Option("--installed", help="Test the TensorFlow of the --python interpreter.")
    ] = False,
    python: Annotated[
        str | None,
        typer.Option("--python", metavar="PATH", help="Interpreter for the test environments."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="SPEC",
            help="What to compare with: a .whl, a requirement, or 'none'. Default: the stock "
            "tensorflow-cpu of the same version.",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Shorter measurements for CI (under 2 minutes).")
    ] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            metavar="SECONDS",
            min=1.0,
            help="Time for the benchmark: undecided ops are timed again while it lasts. "
            "Default: 90 with --quick, else 300.",
            show_default=False,
        ),
    ] = None,
    bench: Annotated[
        bool, typer.Option("--bench/--no-bench", help="Benchmark, or only probe the import.")
    ] = True,
    settings: Annotated[
        bool,
        typer.Option("--settings/--no-settings", help="Try TCMalloc, thread and OpenMP settings."),
    ] = True,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file", metavar="FILE", help="The wheel's runtime env file: read, then updated."
        ),
    ] = None,
    allow_unused: Annotated[
        bool,
        typer.Option("--allow-unused", help="Pass even if TensorFlow names unused instructions."),
    ] = False,
    allow_slower: Annotated[
        str | None,
        typer.Option(
            "--allow-slower", metavar="OPS", help="Comma-separated ops allowed to be slower."
        ),
    ] = None,
    min_margin: Annotated[
        float,
        typer.Option(
            "--min-margin", min=0.0, max=1.0, help="Smallest difference called a verdict."
        ),
    ] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    plot_file: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE.png", help="Draw candidate vs baseline per op."),
    ] = None,
    in_image: Annotated[
        list[str] | None,
        typer.Option(
            "--in-image",
            metavar="IMAGE",
            help="Instead: does the wheel's native code load on another system? Its loader is "
            "asked in a container of IMAGE (e.g. tfbuild/base:bullseye, made by tfbuild base). "
            "Repeat for several.",
            show_default=False,
        ),
    ] = None,
    wheelhouse: Annotated[
        Path | None,
        typer.Option(
            "--wheelhouse",
            metavar="DIR",
            help="With --in-image: the dependencies' wheels (pip download -d DIR ...), installed "
            "offline with the image's pip before the import.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Prove a wheel: no unused-instruction complaint at import, and faster than the stock wheel."""
    from tfbuild.core.errors import SmokeFailed
    from tfbuild.smoke.loads import check_in_image_request
    from tfbuild.wheel.overlay_receipt import is_overlay_wheel

    check_in_image_request(wheel, in_image or [], wheelhouse)
    if wheel is not None and not in_image and is_overlay_wheel(Path(wheel)):
        from tfbuild.cli.overlay_command import smoke_overlay

        smoke_overlay(
            Path(wheel), python=python, quick=quick, budget=budget, bench=bench, as_json=as_json
        )
        return
    if in_image and wheel is not None:  # checked: --in-image has a .whl file
        _smoke_in_images(wheel, in_image, wheelhouse=wheelhouse, as_json=as_json)
        return
    from tfbuild.smoke.standin import is_standin_wheel

    if wheel is not None and is_standin_wheel(Path(wheel)):  # the canary: not TensorFlow
        _smoke_standin(Path(wheel), python=python, bench=bench, as_json=as_json)
        return
    from tfbuild.smoke.report import Rules, check_plot
    from tfbuild.smoke.session import SmokeOptions, run_smoke, with_wheel_files

    options = SmokeOptions(
        wheel=wheel,
        installed=installed,
        python=python or sys.executable,
        baseline=baseline,
        quick=quick,
        budget=budget,
        bench=bench,
        settings=settings,
        rules=Rules(
            allow_unused=allow_unused,
            allow_slower=tuple(o.strip() for o in (allow_slower or "").split(",") if o.strip()),
            min_margin=min_margin,
        ),
        env_file=env_file,
    )
    if plot_file is not None:
        check_plot()
    options = with_wheel_files(options)

    report = run_smoke(options, progress=progress("smoke", quiet=as_json))
    if plot_file is not None and report.results:
        from tfbuild.smoke.report import plot

        plot(report, plot_file)
    if as_json:
        print_json(report.to_json())
    else:
        from tfbuild.cli.wheel_display import print_smoke

        print_smoke(report)
        print_forecast_beside(report.forecast)
    if not report.passed:
        raise SmokeFailed(f"{report.candidate_label} did not pass", why="; ".join(report.failures))


def _smoke_standin(wheel: Path, *, python: str | None, bench: bool, as_json: bool) -> None:
    """``smoke`` of the canary's STAND-IN wheel: installed, imported and run as what it is, its
    flags checked (recorded, and in its machine code); exit 7 when it does not work."""
    from tfbuild.core.errors import SmokeFailed
    from tfbuild.smoke.standin import run_standin_smoke

    report = run_standin_smoke(
        wheel, python=python or sys.executable, say=progress("smoke", quiet=as_json)
    )
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


# --- index -------------------------------------------------------------------------------------------


def index_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The directory of wheels, e.g. dist.")
    ],
    title: Annotated[
        str | None,
        typer.Option(
            "--title", help="The page's title (default: a fixed one).", show_default=False
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            metavar="URL",
            help="Link the wheels at URL/NAME (e.g. a release's download URL), not beside the page.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the wheels as JSON.")] = False,
) -> None:
    """Write DIR/index.html (a pip --find-links page, sha256 in every link) and DIR/SHA256SUMS."""
    from tfbuild.wheel.index import write_index

    result = write_index(directory, title=title, base_url=base_url)
    if as_json:
        print_json(result.to_json())
        return
    print_index(result)


# --- pick ----------------------------------------------------------------------------------------------


def pick_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="DIR_OR_INDEX_URL",
            help="A directory of wheels (e.g. dist), one .whl, or an index page that links to "
            "them: a file (e.g. dist/index.html, written by tfbuild index) or an http(s) URL.",
        ),
    ],
    cpuinfo: Annotated[
        Path | None,
        typer.Option(
            "--cpuinfo", metavar="FILE", help="Pick for the machine of a saved /proc/cpuinfo."
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            metavar="X.Y",
            help="The Python to match (default: --pip-python's, else tfbuild's own).",
            show_default=False,
        ),
    ] = None,
    driver_cuda: Annotated[
        str | None,
        typer.Option(
            "--driver-cuda",
            metavar="X.Y|none",
            help="The newest CUDA the GPU driver supports (default: from nvidia-smi; none with "
            "--cpuinfo).",
            show_default=False,
        ),
    ] = None,
    glibc: Annotated[
        str | None,
        typer.Option(
            "--glibc",
            metavar="X.Y",
            help="The machine's glibc (default: this machine's; not checked with --cpuinfo).",
            show_default=False,
        ),
    ] = None,
    libstdcxx: Annotated[
        str | None,
        typer.Option(
            "--libstdcxx",
            metavar="X.Y.Z",
            help="The newest GLIBCXX_ version of the machine's libstdc++, e.g. 3.4.25 (default: "
            "this machine's; not checked with --cpuinfo).",
            show_default=False,
        ),
    ] = None,
    tf: Annotated[
        str | None,
        typer.Option("--tf", metavar="VERSION", help="Only this TensorFlow release, e.g. 2.20."),
    ] = None,
    variant: Annotated[
        Variant | None,
        typer.Option("--variant", case_sensitive=False, help="Only this kind of build."),
    ] = None,
    install: Annotated[
        bool, typer.Option("--install", help="pip install the chosen wheel.")
    ] = False,
    pip_python: Annotated[
        str | None,
        typer.Option(
            "--pip-python",
            metavar="PATH",
            help="Install into this interpreter (its version is the Python to match).",
            show_default=False,
        ),
    ] = None,
    pip_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--pip-arg",
            metavar="ARG",
            help="Pass ARG to pip install (repeat), e.g. --pip-arg=--no-deps.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="One deadline for reading the index page and its receipts.",
        ),
    ] = PICK_TIMEOUT_S,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="HOST",
            help="Also follow an index page's links to HOST (HOST:PORT, https://HOST) (repeat); "
            "by default only links to the page's own origin.",
            show_default=False,
        ),
    ] = None,
    allow_unhashed: Annotated[
        bool,
        typer.Option(
            "--allow-unhashed",
            help="--install a wheel whose index link carries no #sha256= (pip cannot check it).",
        ),
    ] = False,
    overlay: Annotated[
        bool,
        typer.Option(
            "--overlay",
            help="Only overlays (tfbuild overlay) for the TensorFlow the interpreter has: "
            "--install then installs one beside it instead of a wheel.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the choice as JSON.")] = False,
) -> None:
    """Choose the wheel that runs best here (or on a --cpuinfo machine), and say why; apart, the
    best overlay for the TensorFlow installed."""
    from tfbuild.pick.session import PickRequest, choose, install_choice

    request = PickRequest(
        source=source,
        cpuinfo=cpuinfo,
        python=python,
        driver_cuda=driver_cuda,
        glibc=glibc,
        libstdcxx=libstdcxx,
        tf=tf,
        variant=variant,
        install=install,
        pip_python=pip_python,
        pip_args=tuple(pip_arg or ()),
        timeout=timeout,
        allow_origins=tuple(allow_origin or ()),
        allow_unhashed=allow_unhashed,
        overlay=overlay,
    )
    picked = choose(request)
    if not as_json:
        from tfbuild.cli.wheel_display import print_pick

        print_pick(picked.result)
    if picked.unhashed:
        sys.stderr.write(f"tfbuild: warning: {picked.unhashed}\n")
    installed = install_choice(request, picked, capture=as_json)
    if as_json:
        from tfbuild.core import serial
        from tfbuild.pick.report import pick_report

        print_json(serial.to_data(pick_report(picked.result, installed)))
    failure = picked.failure(installed)
    if failure is not None:
        raise failure
    if installed is not None and not as_json:
        typer.echo(printable(f"installed {installed.wheel} into {installed.python}"))
