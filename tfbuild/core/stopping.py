"""SIGINT and SIGTERM during a build: the first one stops it, and nothing cuts its clean-up short.

Inside :func:`stop_on_signals` (``tfbuild wheel``, ``doctor`` and ``verify`` run their builds in it),
the first SIGINT or SIGTERM raises :class:`Stopped` where the main thread is, and blocks both
signals (``pthread_sigmask``) from then on; a later one, even a few milliseconds after, is held off
while the ``finally`` blocks remove the containers, volumes and work directories. Out of the
outermost ``stop_on_signals`` the stop comes as one :class:`~tfbuild.core.errors.Interrupted` (exit 130,
one line), and both signals are ignored from then on: the process is on its way out. A signal that
arrives inside a :func:`tfbuild.core.files.held_signals` region (clean-up on another way out, making a
work directory and registering its removal, publishing a set) waits until the region is done, then
stops the build.

:class:`Stopped` is a ``KeyboardInterrupt``, so that no ``except Exception`` below takes a stop for
a failure and carries on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from tfbuild.core.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """The build was stopped by ``signal_name`` (SIGINT or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        self.signal_name = signal.Signals(signum).name
        super().__init__(f"stopped by {self.signal_name}")


class _State:
    def __init__(self) -> None:
        self.depth = 0  # nested stop_on_signals
        self.stopped: int | None = None  # the signal that stopped the run
        self.previous: dict[signal.Signals, Any] = {}  # the handlers stop_on_signals replaced
        self.mask: set[int | signal.Signals] = set()  # the main thread's blocked signals before it


_state = _State()


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # The main thread blocks both signals once stopped; a signal that reaches another thread still
    # comes here (Python runs handlers in the main thread), and changes nothing.
    if _state.stopped is not None:
        return
    _state.stopped = signum
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM stop what runs inside (:class:`Stopped`), once; see the module's text.

    Nested uses share the outermost one. Outside the main thread this does nothing (handlers belong
    to the main thread). A SIGINT that was ignored (a background job's) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _state.depth == 0:
        # Not an ignored one, nor one that Python did not set (getsignal gives None).
        handlers = {signum: signal.getsignal(signum) for signum in SIGNALS}
        _state.previous = {s: h for s, h in handlers.items() if h not in (signal.SIG_IGN, None)}
        _state.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
        _state.stopped = None
        for signum in _state.previous:
            signal.signal(signum, _on_signal)
    _state.depth += 1
    try:
        yield
    except Stopped as exc:
        if _state.depth > 1:
            raise
        # Every way out below has run: now the one error the CLI prints (exit 130).
        raise Interrupted(
            f"stopped by {exc.signal_name}",
            why="the build container was stopped and removed, no partial files were left",
        ) from None
    finally:
        _state.depth -= 1
        if _state.depth == 0:
            _restore()


def _restore() -> None:
    stopped, _state.stopped = _state.stopped, None
    for signum, handler in _state.previous.items():
        # After a stop the process is on its way out: a pending or later signal is dropped.
        signal.signal(signum, signal.SIG_IGN if stopped is not None else handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, _state.mask)
    _state.previous = {}
