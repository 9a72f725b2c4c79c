"""The live display of a long build (``tfbuild wheel``): what the user sees while it runs.

The orchestrator (``tfbuild.build.run``) reports events -- a phase starts, the build printed a line,
tfbuild has something to say -- and this module only shows them; it never decides anything about
the build. It reads two kinds of build lines itself: ``[tfbuild] phase: NAME`` (printed by
``build.sh``) switches the phase, and bazel's action counter ``[1,234 / 5,678] ...`` moves the bar.

Three modes (``choose_mode`` picks one):

- ``live``, a terminal: a rich progress bar with the phase, bazel's done/total and the elapsed time;
  errors and warnings (every line with ``verbose``) and tfbuild's notes scroll above it.
- ``plain``, CI or a pipe: no control codes. A header line per phase (a foldable group on GitHub
  Actions), errors and warnings, and a progress line every 10 percent of bazel's counter (every
  line with ``verbose`` or on GitHub, where the groups keep the log readable).
- ``quiet``: nothing at all; the phase and the counter are still tracked for the caller.

rich is imported only on the live path, so importing this module stays fast.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, TextIO

from tfbuild.core.errors import printable

if TYPE_CHECKING:
    from types import TracebackType

    from rich.console import Console
    from rich.progress import Progress, TaskID

Mode = Literal["live", "plain", "quiet"]

#: ``build.sh``'s phase marker.
_PHASE = re.compile(r"\[tfbuild\] phase: (.*)")
#: A count as bazel prints it: ``12``, ``1,234`` or ``1234`` (bounded: int() refuses huge ones).
_COUNT = r"([0-9]{1,3}(?:,[0-9]{3}){1,5}|[0-9]{1,18})"
#: bazel's action counter at the start of a line: ``[1,234 / 5,678]``.
_PROGRESS = re.compile(rf"\s*\[{_COUNT}\s*/\s*{_COUNT}\]")
#: Terminal escape sequences (CSI, OSC, two-character escapes), then any other control character.
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: How bazel and compilers start the lines worth showing when the rest is hidden (case matters:
#: compilers' lower-case ``warning:`` lines are far too many in a TensorFlow build).
_ERROR_PREFIXES = ("ERROR", "error:", "fatal error:", "FAILED")
_WARNING_PREFIXES = ("WARNING:",)
#: A compiler's or linker's error after its location: ``foo.cc:12:3: error: ...``.
_LOCATED_ERROR = re.compile(r": (?:fatal )?error: ")


def clean_line(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (tabs are kept)."""
    return _CONTROL.sub("", _ESCAPE.sub("", text))


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


def severity(line: str) -> Literal["error", "warning"] | None:
    """Whether a build line is an error or a warning worth showing when the rest is hidden."""
    if line.startswith(_ERROR_PREFIXES) or _LOCATED_ERROR.search(line):
        return "error"
    if line.startswith(_WARNING_PREFIXES):
        return "warning"
    return None


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


class _Plain(_Output):
    """Plain lines, flushed one by one; GitHub Actions groups when ``github``."""

    def __init__(self, stream: TextIO, *, verbose: bool, github: bool) -> None:
        self._stream = stream
        self._verbose = verbose
        self._github = github
        self._group_open = False
        self._phase = "build"
        self._decile = -1  # the last tenth of bazel's counter reported in this phase

    def _write(self, text: str) -> None:
        self._stream.write(printable(text) + "\n")  # a build's lines are shown, never obeyed
        self._stream.flush()

    def _close_group(self) -> None:
        if self._group_open:
            self._write("::endgroup::")
            self._group_open = False

    def stop(self) -> None:
        self._close_group()

    def phase(self, name: str, elapsed: float) -> None:
        self._phase = name
        self._decile = -1
        if self._github:
            self._close_group()
            self._write(f"::group::tfbuild: {name}")
            self._group_open = True
        else:
            self._write(f"[tfbuild] {name} ({elapsed:.1f} s)")

    def line(self, text: str, counter: tuple[int, int] | None) -> None:
        text = printable(text)  # first: "ESC[0m::cmd" is a workflow command once ESC[0m is gone
        if self._github:
            # The runner would take a build line starting with "::" as a workflow command.
            self._write("> " + text if text.lstrip().startswith("::") else text)
        elif self._verbose or severity(text):
            self._write(text)
        elif counter is not None:
            self._report(*counter)

    def _report(self, done: int, total: int) -> None:
        decile = done * 10 // total
        if decile > self._decile:
            self._decile = decile
            percent = done * 100 // total
            self._write(f"[tfbuild] {self._phase}: {done}/{total} actions ({percent}%)")

    def note(self, text: str) -> None:
        self._write(f"[tfbuild] {text}")


class _Live(_Output):
    """A rich progress bar for the current phase, with lines printed above it."""

    def __init__(self, stream: TextIO, *, verbose: bool, clock: Callable[[], float]) -> None:
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
        self._task: TaskID | None = None

    def start(self) -> None:
        self._progress.start()

    def stop(self) -> None:
        self._progress.stop()

    def _print(self, text: str, style: str = "") -> None:
        from rich.text import Text

        self._console.print(Text(printable(text), style=style))  # shown, never obeyed

    def phase(self, name: str, elapsed: float) -> None:
        self._print(f"[tfbuild] {name} ({elapsed:.1f} s)", style="dim")
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(name, total=None, counter="")

    def line(self, text: str, counter: tuple[int, int] | None) -> None:
        level = severity(text)
        if level is not None:
            self._print(text, style="red" if level == "error" else "yellow")
        elif self._verbose:
            self._print(text)
        if counter is not None and self._task is not None:
            done, total = counter
            self._progress.update(
                self._task, total=total, completed=done, counter=f"{done:,}/{total:,}"
            )

    def note(self, text: str) -> None:
        self._print(f"[tfbuild] {text}", style="cyan")


def _make_output(
    mode: Mode, stream: TextIO, *, verbose: bool, github: bool, clock: Callable[[], float]
) -> _Output:
    if mode == "live":
        return _Live(stream, verbose=verbose, clock=clock)
    if mode == "plain":
        return _Plain(stream, verbose=verbose, github=github)
    return _Output()


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
    ) -> None:
        """``stream`` defaults to the ``sys.stderr`` of the time of the call; ``github`` (GitHub
        Actions groups in plain mode) defaults to whether ``GITHUB_ACTIONS`` is set."""
        if github is None:
            github = bool(os.environ.get("GITHUB_ACTIONS"))
        self._clock = clock
        self._start = clock()
        self._phase: str | None = None
        self._progress: tuple[int, int] | None = None
        self._output = _make_output(
            mode,
            sys.stderr if stream is None else stream,
            verbose=verbose,
            github=github,
            clock=clock,
        )

    def __enter__(self) -> BuildProgress:
        self._start = self._clock()
        self._output.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._output.stop()

    def phase(self, name: str) -> None:
        """A new phase starts (the same phase again is ignored: the orchestrator and build.sh may
        both announce it)."""
        name = clean_line(name).strip()
        if not name or name == self._phase:
            return
        self._phase = name
        self._progress = None
        self._output.phase(name, self.elapsed())

    def line(self, text: str) -> None:
        """One line of the build's output, without its newline."""
        text = clean_line(text)
        phase = parse_phase(text)
        if phase is not None:
            self.phase(phase)
            return
        counter = parse_progress(text)
        if counter is not None:
            self._progress = counter
        self._output.line(text, counter)

    def note(self, text: str) -> None:
        """tfbuild's own message (one line per line of ``text``)."""
        for part in text.splitlines() or [""]:
            self._output.note(clean_line(part))

    def progress(self) -> tuple[int, int] | None:
        """The last bazel ``(done, total)`` seen in the current phase."""
        return self._progress

    @property
    def current_phase(self) -> str | None:
        return self._phase

    def elapsed(self) -> float:
        """Seconds since the display was entered (or made, before that)."""
        return self._clock() - self._start
