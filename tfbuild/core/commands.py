"""Every external command tfbuild runs, and every script it runs in another interpreter: one typed
call, one error rule, one seam tests replay.

A :class:`Command` says what to run and what to say when it fails (its error class carries the
stage's exit code). :func:`run` raises that error for each way a command fails, its line naming the
program and the last line it said; :func:`ask` decodes that last line as JSON, strictly
(:mod:`tfbuild.core.serial`); :func:`attempt`, for callers to whom a failure is an answer, never
raises.

Scripts that run in another Python (the stock TensorFlow's, an image's) live in
``tfbuild/scripts/``, one file each, importing nothing of tfbuild; :func:`in_python` runs one
isolated (``python -I``), with nothing of tfbuild's tree on its path but what the call names.

Tests replay recorded real output through :func:`replaying` instead of monkeypatching
``subprocess``: every call of this module goes through the one runner in force.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from tfbuild.core import serial
from tfbuild.core.errors import EnvironmentProblem, TfbuildError

T = TypeVar("T")

#: Where the scripts run in other interpreters live.
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

#: Runs a script of SCRIPTS under ``-I``: ``-c LAUNCH SCRIPT USER N PATH... ARG...``: the N paths
#: first on sys.path, the user's site directory too when USER is "user" (outside a virtual
#: environment, as Python itself would), then the script as
#: ``__main__`` with its own arguments.
_LAUNCH = (
    "import runpy, site, sys\n"
    "script, user, n = sys.argv[1], sys.argv[2] == 'user', int(sys.argv[3])\n"
    "sys.path[:0] = sys.argv[4:4 + n]\n"
    "if user and sys.prefix == sys.base_prefix:\n    site.addsitedir(site.getusersitepackages())\n"
    "sys.argv = [script, *sys.argv[4 + n:]]\n"
    "runpy.run_path(script, run_name='__main__')\n"
)


def script(name: str) -> Path:
    """The path of ``tfbuild/scripts/NAME``."""
    path = SCRIPTS / name
    if not path.is_file():  # a programming error: every name is a literal of tfbuild's
        raise FileNotFoundError(path)
    return path


def in_python(
    python: str,
    name: str | Path,
    *args: str,
    paths: Sequence[str] = (),
    user_site: bool = False,
) -> tuple[str, ...]:
    """The argv that runs the script NAME of :data:`SCRIPTS` (or the file a Path names: the tests'
    workers) with ``python``, isolated, ``paths`` first on its ``sys.path`` (and the user's site
    directory with ``user_site``: the interpreter a user names sees what they installed with
    ``pip install --user``)."""
    path = name if isinstance(name, Path) else script(name)
    user = "user" if user_site else "-"
    return (python, "-I", "-c", _LAUNCH, str(path), user, str(len(paths)), *paths, *args)


def python_path(env: Mapping[str, str] | None) -> tuple[str, ...]:
    """The directories ``env``'s PYTHONPATH names, for :func:`in_python`'s ``paths`` (an isolated
    interpreter reads no PYTHONPATH itself)."""
    value = (os.environ if env is None else env).get("PYTHONPATH", "")
    return tuple(p for p in value.split(os.pathsep) if p)


@dataclass(frozen=True, kw_only=True)
class Command:
    """One command to run, and what to say when it fails."""

    argv: tuple[str, ...]
    what: str  # the error's subject: "cannot read the stock TensorFlow of /usr/bin/python3"
    fix: str = ""  # what the user can do about it
    error: type[TfbuildError] = EnvironmentProblem  # whose exit code a failure takes
    env: Mapping[str, str] | None = None  # None: this process's environment
    cwd: Path | None = None
    timeout: float = 600.0
    terminal: bool = False  # its output goes to our standard error as it prints (pip), not kept
    merged: bool = False  # its standard error kept in its standard output, in the order printed
    #: each line it prints (standard output and error together) as it prints it; its last
    #: :data:`KEPT_LINES` lines are kept as its standard output, and it runs until it ends (a
    #: debootstrap takes what it takes; ``timeout`` is not applied)
    on_line: Callable[[str], None] | None = None

    @property
    def program(self) -> str:
        """The program as messages name it: the script for a script, else the command's name."""
        argv = self.argv
        if argv[1:4] == ("-I", "-c", _LAUNCH) and len(argv) > 4:  # as in_python lays it out
            return Path(argv[4]).name
        if len(argv) > 2 and argv[1] == "-m":
            return f"{Path(argv[0]).name} -m {argv[2]}"
        return Path(argv[0]).name


@dataclass(frozen=True, kw_only=True)
class Finished:
    """How a command ended: its exit code (negative: the signal that killed it; None: it did not
    start, or outlived its time limit, and ``problem`` says which) and what it printed."""

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    problem: str | None = None  # "not found", "did not finish within 60 s"

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def last_line(self) -> str:
        """The last non-blank line it printed (standard error first), or how it ended."""
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1]
        return self.problem or f"it exited with {self.returncode} and said nothing"


#: What running a call gives. The real one starts a process; tests replay recordings.
CommandRunner = Callable[[Command], Finished]


#: The lines a call with ``on_line`` keeps (a long tool's output goes to its log, not memory).
KEPT_LINES = 20


def _stream_here(call: Command, on_line: Callable[[str], None]) -> Finished:
    tail: list[str] = []
    try:
        with subprocess.Popen(  # argv is built by tfbuild, never by a shell
            list(call.argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            env=None if call.env is None else dict(call.env),
            cwd=call.cwd,
        ) as proc:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.rstrip("\n")
                tail = [*tail[1 - KEPT_LINES :], line]
                on_line(line)
            code = proc.wait()
    except OSError as exc:
        return Finished(returncode=None, problem=f"it cannot run: {exc.strerror or exc}")
    return Finished(returncode=code, stdout="\n".join(tail))


def _run_here(call: Command) -> Finished:
    if call.on_line is not None:
        return _stream_here(call, call.on_line)
    # to the terminal: its output on our standard error, where progress goes
    out: Any = sys.stderr if call.terminal else subprocess.PIPE
    try:
        done = subprocess.run(  # argv is built by tfbuild, never by a shell
            list(call.argv),
            stdout=out,
            stderr=None if call.terminal else subprocess.STDOUT if call.merged else subprocess.PIPE,
            text=True,
            errors="replace",
            timeout=call.timeout,
            check=False,
            env=None if call.env is None else dict(call.env),
            cwd=call.cwd,
        )
    except subprocess.TimeoutExpired as exc:
        return Finished(
            returncode=None,
            stdout=_text(exc.stdout),
            stderr=_text(exc.stderr),
            problem=f"it did not finish within {call.timeout:.0f} s",
        )
    except OSError as exc:
        return Finished(returncode=None, problem=f"it cannot run: {exc.strerror or exc}")
    return Finished(returncode=done.returncode, stdout=done.stdout or "", stderr=done.stderr or "")


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


_RUNNER: contextvars.ContextVar[CommandRunner] = contextvars.ContextVar("runner", default=_run_here)


@contextlib.contextmanager
def replaying(runner: CommandRunner) -> Iterator[None]:
    """Within the block, every call of this module goes to ``runner`` (tests: recorded output)."""
    token = _RUNNER.set(runner)
    try:
        yield
    finally:
        _RUNNER.reset(token)


def attempt(call: Command) -> Finished:
    """Run ``call`` and say how it ended; never raises."""
    return _RUNNER.get()(call)


def failure(call: Command, finished: Finished, why: str | None = None) -> TfbuildError:
    """The one error for a call that failed: its subject, the program and its last line."""
    if why is None:
        how = finished.problem or (
            f"it was killed by {signal_name(-finished.returncode)}"
            if finished.returncode is not None and finished.returncode < 0
            else f"it exited with {finished.returncode}"
        )
        said = finished.last_line
        why = how if said in (how, finished.problem) else f"{how}: {said}"
    tail = tuple(finished.stderr.strip().splitlines()[-10:])
    return call.error(call.what, why=f"{call.program}: {why}", fix=call.fix, details=tail)


def signal_name(number: int) -> str:
    """``SIGILL`` for 4; ``signal 99`` for a number no signal has."""
    try:
        return signal.Signals(number).name  # SIGILL: built for instructions this CPU lacks
    except ValueError:
        return f"signal {number}"


def run(call: Command) -> Finished:
    """Run ``call``; its error when it cannot start, outlives its limit or exits non-zero."""
    finished = attempt(call)
    if not finished.ok:
        raise failure(call, finished)
    return finished


def decode_last_line(call: Command, finished: Finished, kind: type[T]) -> T:
    """The last line of what ``call`` printed, a JSON value, as ``kind``; its error when not."""
    lines = [line for line in finished.stdout.splitlines() if line.strip()]
    try:
        if not lines:
            raise ValueError("it printed nothing")
        return serial.from_data(json.loads(lines[-1]), kind)
    except ValueError as exc:
        raise failure(call, finished, f"its answer is not what tfbuild asked for: {exc}") from None


def ask(call: Command, kind: type[T]) -> T:
    """Run ``call`` and decode the last line it printed (JSON) as ``kind``."""
    return decode_last_line(call, run(call), kind)


def spawn(call: Command, *, stderr: IO[str] | int) -> subprocess.Popen[str]:
    """Start ``call`` as a process tfbuild talks to through its standard input and output (the
    measuring worker); its error when it cannot start."""
    try:
        return subprocess.Popen(  # argv is built by tfbuild, never by a shell
            list(call.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=None if call.env is None else dict(call.env),
            cwd=call.cwd,
        )
    except OSError as exc:
        problem = f"it cannot run: {exc.strerror or exc}"
        raise failure(call, Finished(returncode=None, problem=problem)) from None


def wait_or_kill(process: subprocess.Popen[str], timeout: float) -> None:
    """Wait up to ``timeout`` seconds for a spawned process to end, then kill it."""
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
