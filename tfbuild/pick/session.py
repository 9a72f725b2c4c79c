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

from tfbuild.core.errors import TfbuildError, UsageError
from tfbuild.core.pythons import PythonChoice, python_executable
from tfbuild.pick.fetch import FetchLimits
from tfbuild.pick.install import InstallResult, check_hash, install
from tfbuild.pick.listing import load_wheels
from tfbuild.pick.machine import describe_host, with_tensorflow
from tfbuild.pick.options import PickRequest
from tfbuild.pick.rank import PickOptions, PickResult, pick


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
    if request.install and request.cpuinfo is not None:
        raise UsageError(
            "--install and --cpuinfo together",
            why="--install installs on this machine, --cpuinfo describes another one",
            fix="Drop --cpuinfo to pick for this machine.",
        )
    limits = FetchLimits(timeout=request.timeout)
    options = PickOptions(tf=request.tf, variant=request.variant, overlay=request.overlay)
    version = request.python.version if request.python is not None else None
    interpreter = request.python.executable if request.python is not None else None
    host = describe_host(
        cpuinfo=request.cpuinfo,
        python=version,
        interpreter=interpreter,
        driver_cuda=request.driver_cuda,
        glibc=request.glibc,
        libstdcxx=request.libstdcxx,
    )
    wheels = load_wheels(request.source, limits=limits, allow_origins=request.allow_origin)
    if any(w.is_overlay for w in wheels.wheels):  # only then: importing TensorFlow takes seconds
        host = with_tensorflow(host, interpreter=interpreter, python=version)
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
        python=_install_into(request.python),
        pip_args=request.pip_arg,
        capture=capture,
    )


def _install_into(python: PythonChoice | None) -> str:
    """The interpreter ``--install`` installs into: ``--python``'s; for ``--python X.Y`` one of
    that version here (:func:`~tfbuild.core.pythons.python_executable`); else tfbuild's own."""
    if python is not None and python.executable is not None:
        return python.executable
    if python is not None and python.version is not None:
        return python_executable(python.version)
    return sys.executable
