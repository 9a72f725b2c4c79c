"""The live display of a long build (``tfbuild wheel``): what the user sees while it runs.

The orchestrator (``tfbuild.build.run``) reports events -- a phase starts, the build printed a line,
tfbuild has something to say -- and this module only shows them; it never decides anything about
the build. It reads three kinds of build lines itself: ``[tfbuild] phase: NAME`` (printed by
``build.sh``) switches the phase, the image builder's ``Step 3/9 : RUN ...`` says which stage of the
toolchain image is being built, and bazel's action counter ``[1,234 / 5,678] ...`` moves the bar.
The tools' other lines are in the build's log file; here they show only with ``verbose`` (and the
errors and warnings among them always).

Three modes (``choose_mode`` picks one):

- ``live``, a terminal: a rich progress bar with the phase, the image's step or bazel's done/total
  and the elapsed time; each image step, errors and warnings (every line with ``verbose``) and
  tfbuild's notes scroll above it.
- ``plain``, CI or a pipe: no control codes. A header line per phase (a foldable group on GitHub
  Actions), each image step, errors and warnings, a progress line every 10 percent of bazel's
  counter (every line with ``verbose`` or on GitHub, where the groups keep the log readable), and
  whenever :data:`HEARTBEAT_S` seconds passed without a line, one that says where the phase is and
  for how long (then less often while nothing else is said).
- ``quiet``: nothing at all.

rich is imported only on the live path, so importing this module stays fast.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, TextIO

from tfbuild.core.controls import printable, printable_line
from tfbuild.core.text import terminal_width, wrap

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

Mode = Literal["live", "plain", "quiet"]

#: ``build.sh``'s phase marker.
_PHASE = re.compile(r"\[tfbuild\] phase: (.*)")
#: A count as bazel prints it: ``12``, ``1,234`` or ``1234`` (bounded: int() refuses huge ones).
_COUNT = r"([0-9]{1,3}(?:,[0-9]{3}){1,5}|[0-9]{1,18})"
#: bazel's action counter at the start of a line: ``[1,234 / 5,678]``.
_PROGRESS = re.compile(rf"\s*\[{_COUNT}\s*/\s*{_COUNT}\]")
#: How bazel and compilers start the lines worth showing when the rest is hidden (case matters:
#: compilers' lower-case ``warning:`` lines are far too many in a TensorFlow build).
_ERROR_PREFIXES = ("ERROR", "error:", "fatal error:", "FAILED")
_WARNING_PREFIXES = ("WARNING:",)
#: A compiler's or linker's error after its location: ``foo.cc:12:3: error: ...``.
_LOCATED_ERROR = re.compile(r": (?:fatal )?error: ")
#: The image builder's step (Docker's legacy builder): ``Step 3/9 : RUN apt-get update ...``.
_STEP = re.compile(r"Step ([0-9]{1,4})/([0-9]{1,4}) : (.*)")
#: bazel's lines that say where it is before its action counter starts (or while it waits).
_BAZEL_STATUS = ("Loading:", "Analyzing:", "Fetching ", "Computing main repo mapping")
#: Seconds without a line shown after which a plain display says where the phase is; each time it
#: says so again with nothing else said between, it waits twice as long, up to HEARTBEAT_MAX_S (an
#: hour of one bazel counter decile is a dozen lines, not hundreds).
HEARTBEAT_S = 15.0
HEARTBEAT_MAX_S = 300.0
#: How often the plain display's ticker looks (real seconds).
_TICK_S = 2.0
#: The most of a step's instruction or a bazel status line a plain or live display shows.
_SHOWN = 72


def parse_phase(line: str) -> str | None:
    """The phase a ``[tfbuild] phase: NAME`` line starts, or None for any other line."""
    match = _PHASE.fullmatch(line.rstrip())
    if match is None:
        return None
    return match.group(1).strip() or None


def parse_progress(line: str) -> tuple[int, int] | None:
    """bazel's ``(done, total)`` from a line starting with ``[1,234 / 5,678]``, or None."""
    match = _PROGRESS.match(line)
    if match is None:
        return None
    done, total = (int(group.replace(",", "")) for group in match.groups())
    if total <= 0 or done > total:
        return None
    return done, total


def parse_step(line: str) -> tuple[int, int, str] | None:
    """The image builder's ``(step, steps, instruction)`` from ``Step 3/9 : RUN ...``, or None."""
    match = _STEP.fullmatch(line.strip())
    if match is None:
        return None
    step, steps = int(match.group(1)), int(match.group(2))
    if not 0 < step <= steps:
        return None
    return step, steps, match.group(3).strip()


def shortened(text: str) -> str:
    """``text`` on one line, whitespace runs collapsed, cut to ``_SHOWN`` characters with ``...``."""
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3].rstrip() + "..."


def _minutes(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``1 h 02 min``: how long a phase has run, for people."""
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def severity(line: str) -> Literal["error", "warning"] | None:
    """Whether a build line is an error or a warning worth showing when the rest is hidden."""
    if line.startswith(_ERROR_PREFIXES) or _LOCATED_ERROR.search(line):
        return "error"
    if line.startswith(_WARNING_PREFIXES):
        return "warning"
    return None


@contextlib.contextmanager
def ticking(tick: Callable[[], None]) -> Iterator[None]:
    """``tick`` called every :data:`_TICK_S` seconds from a thread of its own while the block runs
    (a stream closed meanwhile makes it say nothing, never an error)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(_TICK_S):
            with contextlib.suppress(OSError, ValueError):
                tick()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def choose_mode(*, quiet: bool, stream: TextIO, env: Mapping[str, str]) -> Mode:
    """``quiet`` if asked; ``plain`` in CI, on a dumb terminal or when ``stream`` is not a
    terminal; ``live`` otherwise."""
    if quiet:
        return "quiet"
    if env.get("CI") or env.get("GITHUB_ACTIONS") or env.get("TERM") == "dumb":
        return "plain"
    return "live" if _isatty(stream) else "plain"


class _Output:
    """How a mode shows the events; this base shows nothing (the quiet mode)."""

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def phase(self, name: str, elapsed: float) -> None:
        return None

    def line(self, text: str, counter: tuple[int, int] | None) -> None:
        return None

    def note(self, text: str) -> None:
        return None

    def tick(self) -> None:
        return None


class _Plain(_Output):
    """Plain lines, flushed one by one; GitHub Actions groups when ``github``. A ticker thread
    (:meth:`tick`, every few seconds while started) says where the phase is whenever nothing was
    written for :data:`HEARTBEAT_S` seconds: a silent tool (a package's postinst, bazel's analysis)
    never leaves a silent minute."""

    def __init__(
        self,
        stream: TextIO,
        *,
        verbose: bool,
        github: bool,
        tag: str = "tfbuild",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._verbose = verbose
        self._github = github
        self._tag = tag
        self._clock = clock
        self._group_open = False
        self._phase = "build"
        self._decile = -1  # the last tenth of bazel's counter reported in this phase
        self._started = clock()  # when the phase started
        self._written = clock()  # when a line was last written
        self._beats = 0  # heartbeats since the last other line
        self._where = ""  # the image's step, bazel's counter or status, as last seen
        self._lock = threading.RLock()  # the ticker writes too
        self._ticker = contextlib.ExitStack()

    def _write(self, text: str) -> None:
        with self._lock:
            shown = printable(text)  # a build's lines are shown, never obeyed
            width = None if self._github else terminal_width(self._stream)
            if width is not None:  # a terminal: wrapped to it, further lines four columns in
                lines = wrap(shown, width, rest=4) or [""]
                shown = "\n    ".join(lines)
            self._stream.write(shown + "\n")
            self._stream.flush()
            self._written = self._clock()
            self._beats = 0

    def _close_group(self) -> None:
        if self._group_open:
            self._write("::endgroup::")
            self._group_open = False

    def start(self) -> None:
        self._ticker.enter_context(ticking(self.tick))

    def stop(self) -> None:
        self._ticker.close()
        with self._lock:
            self._close_group()

    def tick(self) -> None:
        """Say where the phase is, when nothing was written for :data:`HEARTBEAT_S` seconds
        (twice as long after each such line, up to :data:`HEARTBEAT_MAX_S`)."""
        with self._lock:
            wait = min(HEARTBEAT_S * 2**self._beats, HEARTBEAT_MAX_S)
            if self._clock() - self._written < wait:
                return
            where = f"{self._where}; " if self._where else ""
            since = _minutes(self._clock() - self._started)
            beats = self._beats
            self._write(f"[{self._tag}] {self._phase}: {where}{since} so far")
            self._beats = beats + 1

    def phase(self, name: str, elapsed: float) -> None:
        with self._lock:
            self._phase = name
            self._decile = -1
            self._started = self._clock()
            self._where = ""
            if self._github:
                self._close_group()
                self._write(f"::group::{self._tag}: {name}")
                self._group_open = True
            else:
                self._write(f"[{self._tag}] {name} ({elapsed:.1f} s)")

    def line(self, text: str, counter: tuple[int, int] | None) -> None:
        text = printable(text)  # first: "ESC[0m::cmd" is a workflow command once ESC[0m is gone
        decile = -1 if counter is None else counter[0] * 10 // counter[1]
        with self._lock:
            step = parse_step(text)
            if step is not None:
                number, steps, instruction = step
                self._where = f"step {number}/{steps} {shortened(instruction)}"
            elif counter is not None:
                done, total = counter
                self._where = f"{done}/{total} actions ({done * 100 // total}%)"
            elif text.strip().startswith(_BAZEL_STATUS):
                self._where = shortened(text.strip())
            if self._github:
                # The runner would take a build line starting with "::" as a workflow command.
                self._write("> " + text if text.lstrip().startswith("::") else text)
            elif self._verbose or severity(text):
                self._write(text)
            elif step is not None or decile > self._decile:  # a step, or a tenth more done
                self._decile = max(decile, self._decile)
                self._write(f"[{self._tag}] {self._phase}: {self._where}")

    def note(self, text: str) -> None:
        self._write(f"[{self._tag}] {text}")


class _Live(_Output):
    """A rich progress bar for the current phase, with lines printed above it."""

    def __init__(
        self,
        stream: TextIO,
        *,
        verbose: bool,
        clock: Callable[[], float],
        tag: str = "tfbuild",
    ) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        # The live mode was chosen for a terminal: say so, rather than let rich guess again.
        self._console: Console = Console(file=stream, force_terminal=True, highlight=False)
        self._progress: Progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.fields[counter]}", markup=False),
            TimeElapsedColumn(),
            console=self._console,
            get_time=clock,
            refresh_per_second=4,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._verbose = verbose
        self._tag = tag
        self._task: TaskID | None = None
        self._phase = ""

    def start(self) -> None:
        self._progress.start()

    def stop(self) -> None:
        self._progress.stop()

    def _print(self, text: str, style: str = "") -> None:
        from rich.text import Text

        self._console.print(Text(printable(text), style=style))  # shown, never obeyed

    def phase(self, name: str, elapsed: float) -> None:
        self._print(f"[{self._tag}] {name} ({elapsed:.1f} s)", style="dim")
        self._phase = name
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(name, total=None, counter="")

    def line(self, text: str, counter: tuple[int, int] | None) -> None:
        level = severity(text)
        step = parse_step(text)
        if level is not None:
            self._print(text, style="red" if level == "error" else "yellow")
        elif self._verbose:
            self._print(text)
        elif step is not None:
            self._print(
                f"[{self._tag}] {self._phase}: step {step[0]}/{step[1]} {shortened(step[2])}",
                style="dim",
            )
        if step is not None and self._task is not None:
            number, steps, _ = step
            self._progress.update(
                self._task, total=steps, completed=number - 1, counter=f"step {number}/{steps}"
            )
        if counter is not None and self._task is not None:
            done, total = counter
            self._progress.update(
                self._task, total=total, completed=done, counter=f"{done:,}/{total:,}"
            )

    def note(self, text: str) -> None:
        self._print(f"[{self._tag}] {text}", style="cyan")


class BuildProgress:
    """What a build shows while it runs; use it as a context manager around the build."""

    def __init__(
        self,
        *,
        mode: Mode,
        verbose: bool = False,
        stream: TextIO | None = None,
        github: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        tag: str = "tfbuild",
    ) -> None:
        """``stream`` defaults to the ``sys.stderr`` of the time of the call; ``github`` (GitHub
        Actions groups in plain mode) defaults to whether ``GITHUB_ACTIONS`` is set; ``tag`` is
        whose lines they are (``[tfbuild] ...``, ``[verify] ...``)."""
        if github is None:
            github = bool(os.environ.get("GITHUB_ACTIONS"))
        self._clock = clock
        self._start = clock()
        self._phase: str | None = None
        stream = sys.stderr if stream is None else stream
        self._output = _Output()
        if mode == "live":
            self._output = _Live(stream, verbose=verbose, clock=clock, tag=tag)
        elif mode == "plain":
            self._output = _Plain(stream, verbose=verbose, github=github, tag=tag, clock=clock)

    def __enter__(self) -> BuildProgress:
        self._start = self._clock()
        self._output.start()
        return self

    def __exit__(self, *exc_details: object) -> None:
        self._output.stop()

    def phase(self, name: str) -> None:
        """A new phase starts (the same phase again is ignored: the orchestrator and build.sh may
        both announce it)."""
        name = printable_line(name).strip()
        if not name or name == self._phase:
            return
        self._phase = name
        self._output.phase(name, self.elapsed())

    def line(self, text: str) -> None:
        """One line of the build's output, without its newline."""
        text = printable_line(text)
        phase = parse_phase(text)
        if phase is not None:
            self.phase(phase)
            return
        self._output.line(text, parse_progress(text))

    def note(self, text: str) -> None:
        """tfbuild's own message (one line per line of ``text``)."""
        for part in text.splitlines() or [""]:
            self._output.note(printable_line(part))

    def tick(self) -> None:
        """What the plain display's ticker does every few seconds: say where the phase is when
        nothing was shown for :data:`HEARTBEAT_S` seconds (the other modes: nothing)."""
        self._output.tick()

    def elapsed(self) -> float:
        """Seconds since the display was entered (or made, before that)."""
        return self._clock() - self._start
