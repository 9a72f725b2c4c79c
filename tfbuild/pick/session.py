"""``tfbuild pick`` end to end: the request's steps in order, the choice, the install, the outcome.

Checked first (``--install`` with ``--cpuinfo``), then the machine described, the wheels loaded (and
when there is an overlay among them, the interpreter asked which TensorFlow it has), the choice made
(:func:`choose`); a chosen wheel linked without ``#sha256=`` is refused for ``--install`` before
anything is printed. :func:`install_choice` runs pip, and :meth:`Picked.failure` is the error the
command ends with, if any. The command line prints between the steps; nothing here prints.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tfbuild.core.defaults import PICK_TIMEOUT_S
from tfbuild.core.errors import TfbuildError
from tfbuild.core.pythons import python_executable
from tfbuild.core.variants import Variant
from tfbuild.pick.fetch import FetchLimits
from tfbuild.pick.install import (
    InstallResult,
    check_hash,
    check_install_here,
    install,
)
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import describe_host, with_tensorflow
from tfbuild.pick.rank import PickOptions, PickResult, pick


@dataclass(frozen=True, kw_only=True)
class PickRequest:
    """What ``tfbuild pick`` was asked (one field per option)."""

    source: str
    cpuinfo: Path | None = None
    python: str | None = None
    driver_cuda: str | None = None
    glibc: str | None = None
    libstdcxx: str | None = None
    tf: str | None = None
    variant: Variant | None = None
    install: bool = False
    #: The interpreter ``--python`` named (its version is matched, its TensorFlow asked, --install
    #: installs into it); None when --python gave a version (``python``) or was not given.
    interpreter: str | None = None
    pip_args: tuple[str, ...] = ()
    timeout: float = PICK_TIMEOUT_S
    allow_origins: tuple[str, ...] = ()
    allow_unhashed: bool = False
    overlay: bool = False  # --overlay: only overlays, for the TensorFlow installed


@dataclass(frozen=True, kw_only=True)
class Picked:
    """The choice, and for ``--install`` of a wheel linked without a hash, the warning to print."""

    result: PickResult
    unhashed: str | None = None

    def failure(self, installed: InstallResult | None) -> TfbuildError | None:
        """The error the command ends with: nothing runs here (no wheel, no overlay), or pip
        failed; else None."""
        if self.result.to_install is None:
            return self.result.no_choice()
        return installed.error() if installed is not None else None


def choose(request: PickRequest) -> Picked:
    """The wheel of ``request.source`` that runs best on the machine, and why."""
    check_install_here(install=request.install, cpuinfo=request.cpuinfo)
    limits = FetchLimits(timeout=request.timeout)
    options = PickOptions.parse(tf=request.tf, variant=request.variant, overlay=request.overlay)
    host = describe_host(
        cpuinfo=request.cpuinfo,
        python=request.python,
        interpreter=request.interpreter,
        driver_cuda=request.driver_cuda,
        glibc=request.glibc,
        libstdcxx=request.libstdcxx,
    )
    wheels = load_wheels(request.source, limits=limits, allow_origins=request.allow_origins)
    if any(w.is_overlay for w in wheels.wheels):  # only then: importing TensorFlow takes seconds
        host = with_tensorflow(host, interpreter=request.interpreter, python=request.python)
    result = pick(wheels, host, options)
    unhashed = None
    if request.install and result.to_install is not None:
        unhashed = check_hash(
            result.to_install, source=request.source, allow_unhashed=request.allow_unhashed
        )
    return Picked(result=result, unhashed=unhashed)


def install_choice(request: PickRequest, picked: Picked, *, capture: bool) -> InstallResult | None:
    """pip installs the chosen wheel (else the chosen overlay) with ``--install`` (``capture``:
    pip's output kept for --json); None when there is nothing to install."""
    chosen = picked.result.to_install
    if not request.install or chosen is None:
        return None
    return install(
        chosen,
        python=_install_into(request),
        pip_args=request.pip_args,
        capture=capture,
    )


def _install_into(request: PickRequest) -> str:
    """The interpreter ``--install`` installs into: ``--python``'s; for ``--python X.Y`` one of
    that version here (:func:`~tfbuild.core.pythons.python_executable`); else tfbuild's own."""
    if request.interpreter is not None:
        return request.interpreter
    if request.python is not None:
        return python_executable(request.python)
    return sys.executable
