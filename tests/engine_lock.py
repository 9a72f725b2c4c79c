"""One real-engine test at a time across the processes of a test run: an exclusive lock on a file
of the run's shared directory, held for the whole test, and a mark of the test that holds it, which
the next one checks is gone (two holders at once would be a lock that does not exclude, and that
test fails naming it)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK = "engine-tests.lock"
HOLDER = "engine-tests.holder"


@contextmanager
def engine_lock(directory: Path) -> Iterator[None]:
    """Wait for the lock in ``directory``, hold it inside the block."""
    with (directory / LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        holder = directory / HOLDER
        try:
            fd = os.open(holder, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            fcntl.flock(lock, fcntl.LOCK_UN)
            raise AssertionError(
                f"another engine test holds the lock too ({holder.read_text()!r}): it does not "
                "exclude here"
            ) from None
        with os.fdopen(fd, "w") as mark:
            mark.write(f"pid {os.getpid()}")
        try:
            yield
        finally:
            holder.unlink()
            fcntl.flock(lock, fcntl.LOCK_UN)
