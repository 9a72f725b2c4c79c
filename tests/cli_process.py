"""Running ``tfbuild ARGS`` in this process as ``python -m tfbuild ARGS`` runs in a new one.

:func:`as_a_process` calls :func:`tfbuild.cli.main` with what a new process would have, and puts
back everything it changed, also when the command raises:

- **its streams**: stdout and stderr are text files over anonymous temporary files (no terminal:
  ``isatty()`` is False, as for a pipe; an ``encoding``, a ``buffer`` and a ``fileno()``, as the real
  streams have; stdout block-buffered and strict, stderr line-buffered with backslashreplace, as
  Python makes them for a pipe), and file descriptors 1 and 2 point at the same files while it
  runs, so that what the command's own children (pip, docker, a compiler) write where they inherit
  lands where a process's would; stdin is ``input``, nothing by default (as /dev/null). What was
  written is read back as ``subprocess.run(text=True)`` reads it (newlines translated).
- **sys.argv** (``python -m`` puts the path of ``tfbuild/__main__.py`` first), **os.environ** (the
  whole of the process's environment, also for what the command starts; ``$TZ`` read again), the
  **working directory**, **tempfile.tempdir** (a process reads ``$TMPDIR`` afresh).
- **signal handlers** of SIGINT and SIGTERM as a new process has them (Ctrl-C raises
  KeyboardInterrupt unless inherited ignored; SIGTERM's default action, or ignored), and the
  signal mask; the command may replace them (``core.stopping`` ignores both after a stop,
  ``core.files.held_signals``) and they are restored afterwards, with ``core.stopping``'s state.
- **logging**: the root logger has no handler and level WARNING, as in a new process (warnings of
  libraries go to stderr through logging's last resort, not to pytest's capture).
- **warnings**: Python's default filters (``-W error`` of pytest's configuration is pytest's, not
  the process's), shown on stderr; a cyclic garbage collection at the end, so that a
  ``ResourceWarning`` of the command is judged here, not in a later test (of the command's objects
  only: this process's are frozen meanwhile, ``gc.freeze``).
- **tfbuild's own state**: ``tfbuild.cli._state`` (``--debug``), ``tfbuild.cli.options._parsing``,
  ``tfbuild.core.stopping._state``, ``tfbuild.core.cache._held`` (the environments a command uses,
  let go of after it as its exit would). The caches of tfbuild (``functools.cache``) hold what is the same
  in every process (parsed templates, archspec's tables, pure arithmetic):
  tests/cli/test_cli_runs.py keeps that list and fails when a new one appears.
- **threads**: the command's non-daemon threads are waited for, as the interpreter waits at exit.

The exit code is SystemExit's (None: 0, a number: itself modulo 256, a message: printed, 1); an
uncaught exception is its traceback on stderr and exit 1 (KeyboardInterrupt: -SIGINT), as Python
ends a process. A run longer than ``timeout`` raises subprocess.TimeoutExpired, as the process runner
does (SIGALRM in the command: a hang guard, never a speed check).

What only a process has is not made here, and a test of it runs ``run_cli_process`` (or its own
process): what ``sys.modules`` holds after a command (here, whatever earlier tests imported), a
terminal (tests/terminal.py), a signal sent to the command, another user, namespace or interpreter,
the interpreter's own traceback and exit code for what leaves ``main()``, the locale (``$LANG``,
``$LC_*`` are not applied here), ``sys.path``, two commands at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import locale
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from subprocess import TimeoutExpired
from typing import Any

import tfbuild
from tests.conftest import CliResult, as_text

#: What ``python -m tfbuild`` has as sys.argv[0].
MAIN = str(Path(tfbuild.__file__).with_name("__main__.py"))

#: The signals whose handlers a command may change.
SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The warning filters of a new interpreter (no -W, no PYTHONWARNINGS), latest first.
DEFAULT_FILTERS: tuple[tuple[str, type[Warning], str], ...] = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


class _Hung(BaseException):
    """The run took longer than its timeout (a BaseException: no ``except Exception`` takes it)."""


def _capture_file() -> int:
    """An anonymous temporary file, written in append mode (the command and its children share it)."""
    fd, path = tempfile.mkstemp(prefix="tfbuild-cli-")
    Path(path).unlink()
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    return fd


def _stream(
    fd: int, name: str, encoding: str, *, errors: str, line_buffering: bool
) -> io.TextIOWrapper:
    raw = io.FileIO(os.dup(fd), "w")
    raw.name = name  # as the real ones: <stdout>, <stderr>
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=encoding,
        errors=errors,
        newline="\n",
        line_buffering=line_buffering,
    )


def _read_back(fd: int) -> str:
    """What was written to ``fd``, as ``subprocess.run(text=True)`` gives it."""
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return as_text(b"".join(chunks))


def _io_encoding(env: dict[str, str]) -> tuple[str, str | None]:
    """The encoding (and errors) of a new process's streams: PYTHONIOENCODING's, else the locale's."""
    encoding, _, errors = env.get("PYTHONIOENCODING", "").partition(":")
    return encoding or locale.getpreferredencoding(False), errors or None


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` as os.environ (the C library's too: what the command starts inherits it); $TZ read
    again, as a new process reads it."""
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)
        time.tzset()


@contextlib.contextmanager
def _streams(env: dict[str, str], stdin: bytes, out: int, err: int) -> Iterator[None]:
    """stdout and stderr on the capture files ``out`` and ``err`` (sys.stdout, sys.stderr and fds
    1, 2), stdin ``stdin``."""
    encoding, errors = _io_encoding(env)
    saved = sys.stdin, sys.stdout, sys.stderr
    for name in ("stdout", "stderr"):
        with contextlib.suppress(Exception):
            getattr(sys, name).flush()
    given = io.BytesIO(stdin)
    given.name = "<stdin>"
    made = (
        io.TextIOWrapper(io.BufferedReader(given), encoding=encoding, errors=errors or "strict"),
        _stream(out, "<stdout>", encoding, errors=errors or "strict", line_buffering=False),
        # stderr's error handler is always backslashreplace, whatever PYTHONIOENCODING says.
        _stream(err, "<stderr>", encoding, errors="backslashreplace", line_buffering=True),
    )
    saved_fds = [os.dup(1), os.dup(2)]
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin, sys.stdout, sys.stderr = made
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in made:  # ours, whatever the command put in sys.stdout meanwhile
            with contextlib.suppress(Exception):  # as at exit: a failed flush is the command's
                stream.flush()
            with contextlib.suppress(Exception):
                stream.close()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in saved_fds:
            os.close(fd)


@contextlib.contextmanager
def _signals(timeout: float) -> Iterator[None]:
    """SIGINT and SIGTERM as a new process has them, the mask as inherited, a SIGALRM after
    ``timeout`` seconds; all put back after."""
    handlers = {signum: signal.getsignal(signum) for signum in (*SIGNALS, signal.SIGALRM)}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    timer, started = signal.getitimer(signal.ITIMER_REAL), time.monotonic()

    def hung(_signum: int, _frame: object) -> None:
        raise _Hung

    try:
        # An ignored signal stays ignored through exec; Python's own handler becomes the default.
        ignored = {signum for signum in SIGNALS if handlers[signum] == signal.SIG_IGN}
        signal.signal(
            signal.SIGINT,
            signal.SIG_IGN if signal.SIGINT in ignored else signal.default_int_handler,
        )
        signal.signal(
            signal.SIGTERM, signal.SIG_IGN if signal.SIGTERM in ignored else signal.SIG_DFL
        )
        signal.signal(signal.SIGALRM, hung)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if timer[0]:  # someone else's timer, running again for what it had left
            left = max(timer[0] - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, timer[1])
        for signum, handler in handlers.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextlib.contextmanager
def _logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level, disabled = root.handlers[:], root.level, logging.root.manager.disable
    root.handlers = []
    root.setLevel(logging.WARNING)
    logging.disable(logging.NOTSET)
    try:
        yield
    finally:
        root.handlers = handlers
        root.setLevel(level)
        logging.disable(disabled)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    with contextlib.suppress(OSError, ValueError):
        (file or sys.stderr).write(
            warnings.formatwarning(message, category, filename, lineno, line)
        )


@contextlib.contextmanager
def _warnings() -> Iterator[None]:
    """A new interpreter's warning filters, warnings shown on stderr; at the end, a collection of
    what the command left in reference cycles, so that its unclosed files warn here, under these
    filters, and not in a later test under pytest's. This process's own objects are frozen
    meanwhile (gc.freeze): the collection looks at the command's alone, in milliseconds where all
    of a test session's heap takes a tenth of a second or more."""
    freeze = gc.get_freeze_count() == 0  # else someone else's freeze: left alone
    if freeze:
        gc.freeze()
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(DEFAULT_FILTERS):
                warnings.filterwarnings(action, category=category, module=module)  # type: ignore[arg-type]
            warnings.showwarning = _show_warning
            try:
                yield
            finally:
                gc.collect()
    finally:
        if freeze:
            gc.unfreeze()


@contextlib.contextmanager
def _tfbuild_state() -> Iterator[None]:
    """tfbuild's module state as a new process has it, and as it was afterwards."""
    from tfbuild import cli
    from tfbuild.cli import options
    from tfbuild.core import cache, stopping

    state, parsing, stopped = dict(cli._state), list(options._parsing), stopping._state
    held = dict(cache._held)
    cli._state.clear()
    cli._state.update(debug=False)
    options._parsing.clear()
    stopping._state = stopping._State()
    cache._held.clear()
    try:
        yield
    finally:
        cli._state.clear()
        cli._state.update(state)
        options._parsing[:] = parsing
        stopping._state = stopped
        cache.release_all()  # what the command's process would let go of at its exit
        cache._held.update(held)


@contextlib.contextmanager
def _process(argv: Sequence[str], cwd: Path | None) -> Iterator[None]:
    saved_argv, saved_tempdir, saved_cwd = sys.argv, tempfile.tempdir, Path.cwd()
    sys.argv = [MAIN, *argv]
    tempfile.tempdir = None
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        sys.argv, tempfile.tempdir = saved_argv, saved_tempdir
        os.chdir(saved_cwd)


def _exit_code(code: object) -> int:
    """What a process's exit status is for ``sys.exit(code)``; a message is printed first."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1


def _main(argv: list[str]) -> int:
    from tfbuild.cli import main

    try:
        main(argv)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except _Hung:
        raise
    except KeyboardInterrupt:  # Python ends the process by the signal itself
        traceback.print_exc()
        return -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def as_a_process(
    argv: Sequence[str],
    env: dict[str, str],
    *,
    timeout: float,
    cwd: Path | None = None,
    stdin: bytes = b"",
) -> CliResult:
    """``tfbuild ARGV`` run here as a process with environment ``env`` runs (see the module's text)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("run_cli runs the CLI in the main thread, where signal handlers are")
    threads = set(threading.enumerate())
    # Made here, in this process's temporary directory: not in one the command's $TMPDIR names.
    out, err = _capture_file(), _capture_file()
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_process(argv, cwd))
            stack.enter_context(_environment(env))
            stack.enter_context(_tfbuild_state())
            stack.enter_context(_logging())
            stack.enter_context(_streams(env, stdin, out, err))
            stack.enter_context(_warnings())
            try:
                with _signals(timeout):
                    code = _main(list(argv))
                    for thread in set(threading.enumerate()) - threads:
                        if not thread.daemon:
                            thread.join()  # as the interpreter does before it exits
            except _Hung:
                raise TimeoutExpired(["tfbuild", *argv], timeout) from None
        return CliResult(code, _read_back(out), _read_back(err))
    finally:
        os.close(out)
        os.close(err)
