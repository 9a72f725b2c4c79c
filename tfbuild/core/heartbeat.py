"""A line at least every few seconds while something long runs: what it is doing, and for how long.

A command that measures for minutes says each step as it starts; a step can still be long (a
process importing TensorFlow and compiling a model with XLA, an environment being installed).
:class:`Heartbeat` wraps the command's progress callback: every line said through it resets the
clock, and a thread says the current activity again, with the seconds it has lasted, whenever
:data:`EVERY` seconds pass without a line. So the user never waits more than that in silence.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: The longest silence, in seconds: the commands promise a line at least every 10 s, and the
#: heartbeat thread looks once a second, on a machine that may be busy.
EVERY = 6.0


#: The most of a step's line a repeat says again: its first clause, so that the repeats stay short.
SHORT = 64


def _short(message: str) -> str:
    """The step's first clause (up to its first colon or parenthesis), at most :data:`SHORT`
    characters: ``compiling 83 kernels of TensorFlow 2.21.0 for zen4`` of the whole line."""
    cut = min((i for i in (message.find(": "), message.find(" (")) if i > 0), default=len(message))
    head = message[:cut]
    return head if len(head) <= SHORT else head[: SHORT - 3].rstrip() + "..."


class Heartbeat:
    """A progress callback that repeats the current activity after :data:`EVERY` s of silence.

    Use as a context manager (the thread runs inside it); call it as the callback it wraps."""

    def __init__(
        self,
        say: Callable[[str], object],
        *,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._say = say
        self._every = every
        self._clock = clock
        self._lock = threading.Lock()
        self._doing = ""
        self._since = clock()
        self._last = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, message: str) -> None:
        """Say ``message``; it is also what is repeated until the next one."""
        with self._lock:
            self._doing = message
            self._since = self._last = self._clock()
            self._say(message)

    def tick(self) -> None:
        """Repeat the current activity if the last line is :data:`EVERY` s old (the thread's step)."""
        with self._lock:
            now = self._clock()
            if self._doing and now - self._last >= self._every:
                self._last = now
                self._say(f"{_short(self._doing)} (still, {now - self._since:.0f} s)")

    def _run(self) -> None:
        while not self._stop.wait(min(1.0, self._every / 4)):
            self.tick()

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, name="tfbuild-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
