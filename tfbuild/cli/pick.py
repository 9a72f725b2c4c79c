"""``tfbuild pick``: choose the wheel (or overlay) that runs best here, say why; install it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data, progressing
from tfbuild.core.controls import printable
from tfbuild.core.defaults import PICK_TIMEOUT_S
from tfbuild.core.options import CPUINFO, JSON, TF, declared, option
from tfbuild.core.pythons import PYTHON, PythonChoice, parse_python
from tfbuild.core.variants import Variant

if TYPE_CHECKING:
    from tfbuild.overlay.pending import InstalledCheck
    from tfbuild.pick.install import InstallResult
    from tfbuild.pick.session import Picked


@dataclass(frozen=True, kw_only=True)
class PickArgs:
    """What ``tfbuild pick`` was asked (the command line's; :class:`PickRequest` is pick's)."""

    source: str = declared(
        MISSING,
        argument=True,
        metavar="DIR_OR_INDEX_URL",
        help="A directory of wheels (e.g. dist), one .whl, or an index page that links to "
        "them: a file (e.g. dist/index.html, written by tfbuild index) or an http(s) URL.",
    )
    cpuinfo: Path | None = option(CPUINFO, default=None)
    python: PythonChoice | None = option(
        PYTHON.but(
            help="The Python to pick for: an interpreter (its version is matched, its TensorFlow "
            "asked for overlays, --install installs into it) or a version (default: tfbuild's "
            "own).",
            convert=parse_python,
        ),
        default=None,
    )
    driver_cuda: str | None = declared(
        None,
        "--driver-cuda",
        metavar="X.Y|none",
        help="The newest CUDA the GPU driver supports (default: from nvidia-smi; none with "
        "--cpuinfo).",
    )
    glibc: str | None = declared(
        None,
        "--glibc",
        metavar="X.Y",
        help="The machine's glibc (default: this machine's; not checked with --cpuinfo).",
    )
    libstdcxx: str | None = declared(
        None,
        "--libstdcxx",
        metavar="X.Y.Z",
        help="The newest GLIBCXX_ version of the machine's libstdc++, e.g. 3.4.25 (default: "
        "this machine's; not checked with --cpuinfo).",
    )
    tf: str | None = option(TF.but(help="Only this TensorFlow release, e.g. 2.20."), default=None)
    variant: Variant | None = declared(
        None, "--variant", case_sensitive=False, help="Only this kind of build."
    )
    install: bool = declared(
        False, "--install", help="pip install the chosen wheel into the --python interpreter."
    )
    pip_arg: tuple[str, ...] = declared(
        (),
        "--pip-arg",
        metavar="ARG",
        help="Pass ARG to pip install (repeat), e.g. --pip-arg=--no-deps.",
    )
    timeout: float = declared(
        PICK_TIMEOUT_S,
        "--timeout",
        metavar="SECONDS",
        help="One deadline for reading the index page and its receipts.",
    )
    allow_origin: tuple[str, ...] = declared(
        (),
        "--allow-origin",
        metavar="HOST",
        help="Also follow an index page's links to HOST (HOST:PORT, https://HOST) (repeat); "
        "by default only links to the page's own origin.",
    )
    allow_unhashed: bool = declared(
        False,
        "--allow-unhashed",
        help="--install a wheel whose index link carries no #sha256= (pip cannot check it).",
    )
    overlay: bool = declared(
        False,
        "--overlay",
        help="Only overlays (tfbuild overlay) for the TensorFlow the interpreter has: "
        "--install then installs one beside it instead of a wheel.",
    )
    as_json: bool = option(JSON, default=False)


@takes(PickArgs)
def pick_command(command: PickArgs) -> None:
    """Choose the wheel that runs best here (or on a --cpuinfo machine), and say why; apart, the
    best overlay for the TensorFlow installed."""
    from tfbuild.pick.session import PickRequest, choose, install_choice

    python = command.python
    request = PickRequest(
        source=command.source,
        cpuinfo=command.cpuinfo,
        python=python.version if python is not None else None,
        interpreter=python.executable if python is not None else None,
        driver_cuda=command.driver_cuda,
        glibc=command.glibc,
        libstdcxx=command.libstdcxx,
        tf=command.tf,
        variant=command.variant,
        install=command.install,
        pip_args=command.pip_arg,
        timeout=command.timeout,
        allow_origins=command.allow_origin,
        allow_unhashed=command.allow_unhashed,
        overlay=command.overlay,
    )
    picked = choose(request)
    as_json = command.as_json
    if not as_json:
        from tfbuild.cli.wheel_display import print_pick

        print_pick(picked.result)
    if picked.unhashed:
        sys.stderr.write(f"tfbuild: warning: {picked.unhashed}\n")
    installed = install_choice(request, picked, capture=as_json)

    with progressing("pick", quiet=as_json) as say:
        checked = _check_pending(picked, installed, say)
    if as_json:
        from tfbuild.pick.report import pick_report

        print_data(pick_report(picked.result, installed))
    if (failure := picked.failure(installed)) is not None:
        raise failure
    if installed is not None and not as_json:
        typer.echo(printable(f"installed {installed.wheel} into {installed.python}"))
        if checked is not None:
            typer.echo(
                printable(
                    f"  its special-value check passed here ({len(checked.checks)} kernels), "
                    f"recorded in {checked.record}: it loads from the next import tensorflow"
                )
            )


def _check_pending(
    picked: Picked,
    installed: InstallResult | None,
    say: Callable[[str], None],
) -> InstalledCheck | None:
    """An overlay built on a machine without its target's instruction sets, just installed: its
    special-value check, run here before its loader registers a kernel. Should it fail, the
    overlay is uninstalled again and the check's error raised; None when no check waited."""
    chosen = picked.result.to_install
    overlay = chosen.wheel.overlay if chosen is not None else None
    if installed is None or installed.returncode != 0 or overlay is None or not overlay.pending:
        return None
    from tfbuild.core.errors import TfbuildError
    from tfbuild.overlay.package import DISTRIBUTION
    from tfbuild.overlay.pending import check_installed
    from tfbuild.pick.install import uninstall

    say(
        f"{chosen.wheel.filename if chosen else 'the overlay'} was built on a machine without "
        f"{' '.join(overlay.pending)}: its special-value check runs here before it loads"
    )
    try:
        return check_installed(installed.python, progress=say)
    except TfbuildError as error:
        uninstall(DISTRIBUTION, python=installed.python)
        error.why = f"{error.why}; so it was uninstalled again" if error.why else "uninstalled"
        raise
