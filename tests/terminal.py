"""Running the real CLI with its output on a real terminal: a pseudo-terminal of a given width,
for what tfbuild prints differently to a terminal than to a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Collection

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
