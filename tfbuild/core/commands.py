"""Running the few external commands tfbuild asks questions of, behind one injectable seam.

Detectors and probers (a compiler's version, ``nvidia-smi``, the CUDA toolkit, the FMA probe's
compile) take a ``run`` argument of type :data:`Runner` so that tests can replay recorded real output
of commands this machine cannot produce (``nvidia-smi`` without a GPU) instead of monkeypatching
``subprocess``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """What a finished command printed and returned."""

    returncode: int
    stdout: str
    stderr: str


#: A function that runs ``argv`` and returns its result, or None when the program does not exist or
#: cannot be started (or does not finish within the detector's time limit).
Runner = Callable[[Sequence[str]], "CommandResult | None"]


def run_command(
    argv: Sequence[str], *, timeout: float = 10.0, env: Mapping[str, str] | None = None
) -> CommandResult | None:
    """Run ``argv`` with a C locale (in ``env``, default this process's environment) and return its
    output; None if it cannot run or times out."""
    env = {**(os.environ if env is None else env), "LC_ALL": "C"}
    try:
        proc = subprocess.run(  # argv is built by tfbuild, never by a shell
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return CommandResult(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
