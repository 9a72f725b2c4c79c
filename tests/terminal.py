"""Running the real CLI in a pseudo-terminal of a given width, as a user at a terminal sees it: every
line it prints (standard output and error both reach the terminal), each with the second it
arrived, so that a test can hold the output to the terminal's width and the silences to a bound."""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Seen:
    code: int
    lines: tuple[tuple[float, str], ...]  # (seconds since start, the line without its newline)

    @property
    def widest(self) -> int:
        return max((len(line) for _, line in self.lines), default=0)

    @property
    def longest_silence(self) -> float:
        """The longest wait for a line: from the start, between lines, and to the exit."""
        times = [0.0, *(t for t, _ in self.lines)]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def text(self) -> str:
        return "\n".join(f"{t:6.1f} {line}" for t, line in self.lines)


def run_in_terminal(
    args: Sequence[str],
    *,
    columns: int = 80,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 900,
) -> Seen:
    """``python -m tfbuild ARGS`` with a terminal of ``columns`` as its standard streams."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environ = {**(os.environ if env is None else env), "TERM": "dumb"}
    environ.pop("COLUMNS", None)  # the terminal's own size, as a user's shell has it
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfbuild", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=environ,
        cwd=cwd,
        close_fds=True,
    )
    os.close(follower)
    lines: list[tuple[float, str]] = []
    pending = b""
    try:
        while True:
            if time.monotonic() - started > timeout:
                proc.kill()
                raise TimeoutError(f"tfbuild {' '.join(args)} ran over {timeout} s")
            try:
                chunk = os.read(leader, 65536)
            except OSError as exc:  # EIO: the terminal's last writer has gone
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            pending += chunk
            *done, pending = pending.split(b"\n")
            now = time.monotonic() - started
            lines += [(now, line.decode(errors="replace").rstrip("\r")) for line in done]
    finally:
        os.close(leader)
        code = proc.wait(timeout=60)
    if pending:
        lines.append((time.monotonic() - started, pending.decode(errors="replace").rstrip("\r")))
    return Seen(code=code, lines=tuple(lines))
