"""``tfbuild pick``: choose the wheel (or overlay) that runs best here, say why; install it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

from tfbuild.cli.options import takes
from tfbuild.cli.output import print_data, progressing
from tfbuild.core.controls import printable
from tfbuild.core.options import JSON, group, option
from tfbuild.pick.options import PickRequest

if TYPE_CHECKING:
    from tfbuild.overlay.pending import InstalledCheck
    from tfbuild.pick.install import InstallResult
    from tfbuild.pick.session import Picked


@dataclass(frozen=True, kw_only=True)
class PickArgs:
    """What ``tfbuild pick`` was asked: pick's request, and the command's --json."""

    pick: PickRequest = group(PickRequest)
    as_json: bool = option(JSON, default=False)


@takes(PickArgs)
def pick_command(command: PickArgs) -> None:
    """Choose the wheel that runs best here (or on a --cpuinfo machine), and say why; apart, the
    best overlay for the TensorFlow installed."""
    from tfbuild.pick.session import choose, install_choice

    picked = choose(command.pick)
    as_json = command.as_json
    if not as_json:
        from tfbuild.cli.wheel_display import print_pick

        print_pick(picked.result)
    if picked.unhashed:
        sys.stderr.write(f"tfbuild: warning: {picked.unhashed}\n")
    installed = install_choice(command.pick, picked, capture=as_json)

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
