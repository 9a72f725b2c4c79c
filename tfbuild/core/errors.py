"""The one error taxonomy of tfbuild.

Every failure a user can cause or meet is a ``TfbuildError`` subclass. Each class carries its own exit
code, and each instance says three things in one line: what failed, why, and what to do about it.
Only the CLI boundary (``tfbuild.cli.main``) catches them; it prints :meth:`TfbuildError.line` and
exits with :attr:`TfbuildError.exit_code`. A traceback is shown only with ``--debug`` or
``TFBUILD_DEBUG=1``.

Each class below says its exit code and what it means; docs/exit-codes.md lists them for users (1:
a bug in tfbuild, 130: interrupted).
"""

from __future__ import annotations

from typing import ClassVar

from tfbuild.core.controls import printable
from tfbuild.core.defaults import DOCTOR_TIMES


def _one_line(text: str) -> str:
    """Collapse whitespace so that a message always prints as a single line, terminal-safe (a
    message quotes paths and file contents)."""
    return " ".join(printable(text).split())


class TfbuildError(Exception):
    """Base class: a failure with a message for the user and an exit code for scripts."""

    exit_code: ClassVar[int] = 1
    #: What can be done here instead, when the error closes a road: ``main()`` prints it on a
    #: line of its own after the error line (which stays the one line scripts read).
    hint: ClassVar[str] = ""

    def __init__(
        self, what: str, *, why: str = "", fix: str = "", details: tuple[str, ...] = ()
    ) -> None:
        self.what = _one_line(what)
        self.why = _one_line(why)
        self.fix = _one_line(fix)
        # Lines shown above the one-line message (the last lines of a failed build's log).
        self.details = details
        super().__init__(self.line())

    def line(self) -> str:
        """The message as one line: ``what: why. fix``."""
        text = self.what
        if self.why:
            text += f": {self.why.rstrip('.')}"
        if not text.endswith(("?", ".", "!")):
            text += "."
        if self.fix:
            text += f" {self.fix}"
        return text


class UsageError(TfbuildError):
    """An option or argument value is wrong."""

    exit_code = 2


class InputError(TfbuildError):
    """An input file is missing, unreadable or not what it should be."""

    exit_code = 3


class UnsupportedError(TfbuildError):
    """The request is well formed but cannot be met."""

    exit_code = 4


class EnvironmentProblem(TfbuildError):
    """Something this machine needs is missing or unreachable."""

    exit_code = 5


class Unreachable(EnvironmentProblem):
    """A download a build needs cannot be made from here: a host that does not resolve or answer,
    a TLS certificate that does not verify (the source tarball, the toolchain image's packages)."""

    hint = (
        "without the network, tfbuild doctor proves this machine and the whole pipeline with a "
        "STAND-IN canary that needs none of TensorFlow's downloads "
        f"({DOCTOR_TIMES}). A real build gets its downloads through a proxy (HTTPS_PROXY, "
        "passed to every step) and can take its compiling from a remote cache "
        "(--remote-cache URL)."
    )


class BuildFailed(TfbuildError):
    """The build ran and failed."""

    exit_code = 6


class SmokeFailed(TfbuildError):
    """The wheel under test did not pass its checks."""

    exit_code = 7


class NotReproducible(TfbuildError):
    """A rebuild from the receipt gave another wheel (tfbuild verify)."""

    exit_code = 8


class Interrupted(TfbuildError):
    """Stopped by the user (Ctrl-C) or by SIGTERM."""

    exit_code = 130
