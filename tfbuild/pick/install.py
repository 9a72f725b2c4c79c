"""``tfbuild pick --install``: pip installs the chosen wheel into an interpreter.

The one edge after the choice: ``python -m pip install`` in a subprocess, and what came of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfbuild.core import commands
from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.pick.compat import Assessment


def check_hash(assessment: Assessment, *, source: str, allow_unhashed: bool) -> str | None:
    """A wheel linked from an index page is installed only with its ``#sha256=``, which pip checks
    (:attr:`~tfbuild.pick.listing.WheelFile.install_spec`): without one, an error (exit 3), or with
    ``--allow-unhashed`` the warning to print. A directory's own wheels have no link to check."""
    wheel = assessment.wheel
    if not wheel.from_index or wheel.sha256:
        return None
    if not allow_unhashed:
        raise InputError(
            f"will not install {wheel.filename}",
            why=f"its link on {source} carries no #sha256=, so pip could not check what it "
            "downloads",
            fix="Use an index page whose links end in #sha256=HEX (tfbuild index writes them), "
            "or pass --allow-unhashed to install it unchecked.",
        )
    return f"installing {wheel.filename} without a hash check (--allow-unhashed): its link carries no #sha256="


@dataclass(frozen=True, kw_only=True)
class InstallResult:
    """What ``pip install`` did with the chosen wheel."""

    wheel: str
    python: str
    command: tuple[str, ...]
    returncode: int
    output: tuple[str, ...]  # pip's last 40 lines, when captured (--json)

    def error(self) -> EnvironmentProblem | None:
        """The error to raise when pip failed (its output travels in the details), else None."""
        if self.returncode == 0:
            return None
        last = next((line.strip() for line in reversed(self.output) if line.strip()), "")
        return EnvironmentProblem(
            f"pip could not install {self.wheel} into {self.python}",
            why=f"pip exited with status {self.returncode}" + (f": {last}" if last else ""),
            fix="Read pip's output above.",
            details=self.output,
        )


def install(
    assessment: Assessment, *, python: str, pip_args: Iterable[str] = (), capture: bool = False
) -> InstallResult:
    """``python -m pip install [pip_args] WHEEL``; check :meth:`InstallResult.error` after.

    With ``capture`` pip's output is kept (its last 40 lines, for --json); otherwise it goes to
    the terminal (standard error) as pip prints it.
    """
    argv = (python, "-m", "pip", "install", *pip_args, assessment.wheel.install_spec)
    call = commands.Command(
        argv=argv,
        what=f"cannot run {python} -m pip",
        fix="Name the interpreter with --python PATH.",
        terminal=not capture,
        merged=capture,
        timeout=3600,
    )
    proc = commands.attempt(call)
    if proc.returncode is None:
        raise commands.failure(call, proc)
    return InstallResult(
        wheel=assessment.wheel.filename,
        python=python,
        command=argv,
        returncode=proc.returncode,
        output=tuple((proc.stdout or "").splitlines()[-40:]),
    )


def uninstall(distribution: str, *, python: str) -> None:
    """``python -m pip uninstall -y DISTRIBUTION``, its output to the terminal (standard error);
    a failure is pip's to say, and the error being raised says the rest."""
    commands.attempt(
        commands.Command(
            argv=(python, "-m", "pip", "uninstall", "-y", distribution),
            what=f"cannot uninstall {distribution}",
            terminal=True,
            timeout=600,
        )
    )
