"""The build log: each line kept in its file, the last lines, the tools and processes named."""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path
from typing import Protocol

#: Lines of the log shown when a build fails.
TAIL_LINES = 40
_TOOL = re.compile(r"^\[tfbuild\] tool: (\w+) (.*)$")
#: bazel's summary of a build's processes: "INFO: 5 processes: 1 remote cache hit, 1 internal, 3 local."
_PROCESSES = re.compile(r"^INFO: (\d+) process(?:es)?: (.*?)\.?$")
_PROCESS_KIND = re.compile(r"^(\d+) ([a-z][a-z -]*)$")


def bazel_processes(line: str) -> dict[str, int] | None:
    """bazel's process summary line as kind -> count (``total`` the whole), else None."""
    found = _PROCESSES.match(line)
    if not found:
        return None
    counts = {"total": int(found.group(1))}
    for part in found.group(2).split(", "):
        kind = _PROCESS_KIND.match(part.strip())
        if kind:
            counts[kind.group(2)] = counts.get(kind.group(2), 0) + int(kind.group(1))
    return counts


class Progress(Protocol):
    """What the build tells its user (tfbuild.build.progress.BuildProgress, or a quiet one)."""

    def phase(self, name: str) -> None: ...
    def line(self, text: str) -> None: ...
    def note(self, text: str) -> None: ...


class BuildLog:
    """The build log file, the last lines for a failure message, and the tool versions seen."""

    def __init__(self, path: Path, progress: Progress) -> None:
        self.path = path
        self._file = path.open("a", encoding="utf-8", errors="replace")
        self._progress = progress
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.tools: dict[str, str] = {}
        self.processes: dict[str, int] = {}  # bazel's last process summary

    def line(self, text: str) -> None:
        self._file.write(text + "\n")
        self._file.flush()
        self.tail.append(text)
        tool = _TOOL.match(text)
        if tool:
            self.tools[tool.group(1)] = tool.group(2).strip()
        processes = bazel_processes(text)
        if processes is not None:
            self.processes = processes
        self._progress.line(text)

    def note(self, text: str) -> None:
        self._file.write(f"[tfbuild] {text}\n")
        self._file.flush()
        self._progress.note(text)

    def phase(self, name: str) -> None:
        self._file.write(f"[tfbuild] phase: {name}\n")
        self._file.flush()
        self._progress.phase(name)

    def close(self) -> None:
        self._file.close()
