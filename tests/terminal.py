"""Running the real CLI with its output on a real terminal: a pseudo-terminal of a given width,
for what tfbuild prints differently to a terminal than to a pipe (:func:`run_cli_on_terminal`);
and as a user at a terminal sees it, every line with the second it arrived (:func:`run_in_terminal`),
so that a test can hold the output to the terminal's width and the silences to a bound."""

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
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import CliResult


def run_cli_on_terminal(
    *args: str,
    columns: int = 80,
    terminal: Collection[str] = ("stderr",),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> CliResult:
    """``python -m tfbuild ARGS`` with the streams named in ``terminal`` ("stdout", "stderr") each
    on a pseudo-terminal ``columns`` wide (no ``$COLUMNS``: the width is the terminal's own), the
    others piped; every stream captured, a terminal's CR LF read back as LF."""
    full_env = {**os.environ, **(env or {})}
    for name in ("COLUMNS", "LINES", "TFBUILD_DEBUG"):
        full_env.pop(name, None)
    ends: dict[str, tuple[int, int]] = {}
    for stream in terminal:
        main, side = pty.openpty()
        fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        ends[stream] = (main, side)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfbuild", *args],
        stdin=subprocess.DEVNULL,
        stdout=ends["stdout"][1] if "stdout" in ends else subprocess.PIPE,
        stderr=ends["stderr"][1] if "stderr" in ends else subprocess.PIPE,
        env=full_env,
    )
    read: dict[str, bytes] = {}

    def drain(stream: str, fd: int) -> None:
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        read[stream] = b"".join(chunks)

    readers = []
    for stream, (main, side) in ends.items():
        os.close(side)
        reader = threading.Thread(target=drain, args=(stream, main), daemon=True)
        reader.start()
        readers.append(reader)
    try:
        out, err = proc.communicate(timeout=timeout)
        for reader in readers:
            reader.join(timeout)
    finally:
        proc.kill()
        for main, _ in ends.values():
            os.close(main)

    def text(stream: str, piped: bytes | None) -> str:
        data = read.get(stream, b"") if stream in ends else piped or b""
        return data.decode().replace("\r\n", "\n")

    return CliResult(proc.returncode, text("stdout", out), text("stderr", err))


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
