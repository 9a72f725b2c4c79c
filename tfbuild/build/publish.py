"""Publishing into dist/: wheel, receipt and env file as one set under dist/'s lock."""

from __future__ import annotations

import contextlib
import errno
import json
import shutil
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from tfbuild.core.errors import (
    InputError,
    Interrupted,
)
from tfbuild.core.files import (
    DIST_LOCK,
    free_space,
    held_signals,
    human_size,
    locked,
    shown,
    write_files,
)
from tfbuild.core.stopping import Stopped
from tfbuild.wheel.receipt import CanaryCheck, Receipt, read_receipt, receipt_path

#: Room kept beyond what publishing writes: directory entries, the log's last lines, metadata.
PUBLISH_MARGIN = 256 << 10
#: What a write says when the disk (or the user's quota) is full.
_FULL = (errno.ENOSPC, errno.EDQUOT)


def publish(
    dist: Path, built: Path, receipt: Receipt, env_text: str
) -> tuple[Path, Path, Path, bool]:
    """Put the wheel ``built`` into ``dist`` with its receipt and env file, as one set.

    Under dist/'s lock (which ``update_receipt`` and ``tfbuild index`` take too), the three are
    staged under temp names in ``dist`` (the wheel hard linked: no copy, no space), then renamed
    with SIGINT and SIGTERM held off: an earlier wheel of the same name first out of view, the env
    file and the receipt, the wheel last (:func:`tfbuild.core.files.write_files` with ``key_last``).
    A reader never sees a wheel beside another build's receipt or env file; a failure restores the
    previous set; a signal is acted on just after, with the set whole.

    ``built`` is moved: once published, its old name is gone. Returns the wheel, receipt and env
    file published and whether a wheel was replaced. Raises
    :class:`InputError` (exit 3) when ``dist`` has not the room (checked first with ``statvfs``,
    and ENOSPC or EDQUOT while writing) or cannot be written: then nothing was published."""
    wheel = dist / built.name
    receipt_file = receipt_path(wheel)
    env_path = wheel.with_suffix(".env")
    receipt_text = json.dumps(receipt.to_json(), indent=2) + "\n"
    found = built.stat()
    copied = 0 if found.st_dev == dist.stat().st_dev else found.st_size  # else hard linked
    needed = len(receipt_text.encode()) + len(env_text.encode()) + copied + PUBLISH_MARGIN
    placed = False
    try:
        with locked(dist / DIST_LOCK):
            replaced = wheel.exists()
            check_space(dist, needed, what=wheel.name)
            with held_signals():  # milliseconds: two small files written, the wheel linked
                write_files(
                    dist,
                    {
                        env_path.name: (env_text, 0o644),
                        receipt_file.name: (receipt_text, 0o644),
                        wheel.name: (built, stat.S_IMODE(found.st_mode)),
                    },
                    key_last=True,
                )
                placed = True
            with contextlib.suppress(OSError):  # moved, not copied: its old name goes
                built.unlink()
    except OSError as exc:
        raise _cannot_publish(dist, exc, needed=needed, what=wheel.name) from None
    except KeyboardInterrupt as stop:  # stopping.Stopped (SIGINT, SIGTERM), or a plain Ctrl-C
        if not placed:
            raise
        # The signal came while publishing: the set went in whole first, as the message says.
        raise Interrupted(
            f"stopped by {stop.signal_name}" if isinstance(stop, Stopped) else "stopped by Ctrl-C",
            why=f"it came while publishing, which finished first: {shown(str(wheel))}, its "
            "receipt and env file are in place, whole; nothing else was left",
        ) from None
    return wheel, receipt_file, env_path, replaced


def check_space(dist: Path, needed: int, *, what: str) -> None:
    """Refuse (exit 3) to write ``needed`` bytes for ``what`` into ``dist`` without the room."""
    free = free_space(dist)
    if free < needed:
        raise _no_space(
            dist, f"publishing {shown(what)} needs {human_size(needed)}, {human_size(free)} free"
        )


def _no_space(dist: Path, detail: str) -> InputError:
    return InputError(
        f"no space left in {shown(str(dist))}",
        why=f"{detail}; nothing was published",
        fix="Free some space there (or inodes, or quota), or build into another --dist.",
    )


def _full(dist: Path, exc: OSError, doing: str = "writing the build's files") -> str:
    """What a write that met a full disk (or quota) in ``dist`` says: the file, why, what is free."""
    try:
        free = human_size(free_space(dist))
    except OSError:
        free = "unknown"
    where = shown(exc.filename) if isinstance(exc.filename, str) else doing
    return f"{where}: {exc.strerror or 'No space left on device'} ({free} free)"


def _is_full(exc: OSError) -> bool:
    if exc.errno in _FULL:
        return True
    # shutil.copytree gathers each file's error, as text, into one shutil.Error.
    gathered = exc.args[0] if isinstance(exc, shutil.Error) and exc.args else ()
    return isinstance(gathered, list) and any(
        f"[Errno {code}]" in str(entry) for entry in gathered for code in _FULL
    )


@contextlib.contextmanager
def full_disk_is_input(dist: Path, *, doing: str = "writing the build's files") -> Iterator[None]:
    """A full disk (or quota) met while building into ``dist`` (the canary's copy, the log, the
    finished wheel) as one line naming ``dist`` (exit 3), not an internal error."""
    try:
        yield
    except OSError as exc:
        if not _is_full(exc):
            raise
        raise _no_space(dist, _full(dist, exc, doing)) from None


def _cannot_publish(dist: Path, exc: OSError, *, needed: int, what: str) -> InputError:
    """An OSError while publishing as one line: the directory, the file and the reason."""
    if exc.errno in _FULL:
        return _no_space(
            dist, f"{_full(dist, exc)} while publishing {shown(what)} ({human_size(needed)} needed)"
        )
    where = shown(exc.filename) if isinstance(exc.filename, str) else shown(str(dist))
    return InputError(
        f"cannot publish {shown(what)} into {shown(str(dist))}",
        why=f"{where}: {exc.strerror or exc}; nothing was published",
        fix="Let tfbuild write there (a writable --dist directory), or build into another --dist.",
    )


def update_receipt(receipt: Path, canary: CanaryCheck) -> None:
    """Add the canary's section (its instruction-set check and speedup) to a published receipt,
    whole and under the lock of its ``dist/``, as the build published it."""
    with locked(receipt.parent / DIST_LOCK):
        found = read_receipt(receipt)
        text = json.dumps(replace(found, canary=canary).to_json(), indent=2)
        write_files(receipt.parent, {receipt.name: (text + "\n", 0o644)})
