"""Busy neighbours: a CPU-bound process on every CPU we may use, none of them ours.

``tfbuild.detect.contention`` counts the ticks of this process's tree as ours and everything else
on our CPUs as others'. A neighbour started by a shell that exits at once (``cmd & echo $!``) is
reparented away from this process, so it counts as another's, as a compile or another test worker
would. (The approach of ``neighbours`` in tests/detect/test_contention.py.)

Each neighbour carries a tag of its own on its command line, so the clean-up finds every one,
including one whose shell was interrupted before it said the pid; they are SIGKILLed on the way
out whatever happens (an error, KeyboardInterrupt), and the exit waits until /proc shows each gone
(or a zombie: the reaper here is not ours, and a zombie runs nothing).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

PROC = Path("/proc")
SPIN = "while True: pass"
#: Ticks (1/100 s) each neighbour must have run before the context is entered: spinning, not starting.
SPINNING_TICKS = 5


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first); None when gone."""
    try:
        text = (PROC / str(pid) / "stat").read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie has ended; only its parent's wait is missing)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X", "x")


def _ticks(pid: int) -> int:
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else 0


def _ancestors(pid: int) -> set[int]:
    found: set[int] = set()
    while pid > 1 and pid not in found:
        found.add(pid)
        fields = _stat_fields(pid)
        if fields is None:
            break
        pid = int(fields[1])
    return found


def tagged(tag: str) -> list[int]:
    """The pids whose command line holds ``tag`` (ours alone: it is a fresh uuid)."""
    needle = tag.encode()
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def _kill_all(tag: str, pids: Iterable[int], timeout: float = 30.0) -> None:
    """SIGKILL every neighbour (by pid and by tag) and wait until none runs; RuntimeError if one
    still does after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [pid for pid in {*pids, *tagged(tag)} if running(pid)]
        if not alive:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"busy neighbours {alive} outlived SIGKILL")
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


@contextlib.contextmanager
def neighbours(
    cpus: Iterable[int] | None = None, *, python: str = sys.executable
) -> Iterator[tuple[int, ...]]:
    """One busy-loop process pinned to each of ``cpus`` (default: every CPU we may run on), not in
    this process's tree; yields their pids, and kills them all on the way out."""
    chosen = tuple(sorted(os.sched_getaffinity(0) if cpus is None else cpus))
    tag = f"tfbuild-neighbour-{uuid.uuid4().hex}"
    pids: list[int] = []
    try:
        for cpu in chosen:
            started = subprocess.run(  # $0: python, $1: the tag (the loop's argv[1]), $2: the loop
                [
                    "sh",
                    "-c",
                    '"$0" -c "$2" "$1" </dev/null >/dev/null 2>&1 & echo $!',
                    python,
                    tag,
                    SPIN,
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            )
            pids.append(int(started.stdout))
            with contextlib.suppress(OSError):  # gone already, or not allowed: still a neighbour
                os.sched_setaffinity(pids[-1], {cpu})
        ours = os.getpid()
        deadline = time.monotonic() + 30
        for pid in pids:
            if ours in _ancestors(pid):
                raise RuntimeError(f"neighbour {pid} is in this process's tree: it would be ours")
            while _ticks(pid) < SPINNING_TICKS and running(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not running(pid):
                raise RuntimeError(f"neighbour {pid} ended at once")
        yield tuple(pids)
    finally:
        _kill_all(tag, pids)
