"""Reading input files within bounds, and writing files whole.

Every file tfbuild reads from a user or a download (a receipt, a header file, a source tree's rc
files) goes through :func:`read_input`: a regular file (or an explicit ``-`` for standard input)
and at most ``limit`` bytes, counted while reading, so a FIFO, a device or ``/dev/zero`` behind a
link is one line and exit 3, never a hang or a MemoryError.

Writing: a temp name in the same directory, then an atomic rename. Nothing tfbuild writes is ever
seen half-written, and a failure leaves no temp file behind. A set of files (a wheel with its receipt
and env file, a rendered context, an index) goes in as one step with :func:`write_files`, its renames
done with SIGINT and SIGTERM held off (:func:`held_signals`), so a signal never stops it half-way.

Locks: :func:`locked` holds a lock file (``flock``) and removes it when released, so that no lock
file is left behind, without ever letting two holders in at once.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import lzma
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path

from tfbuild.core.errors import EnvironmentProblem, InputError

#: Standard input, where a command accepts it in place of a file.
STDIN = "-"


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a FIFO", "a directory")."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_input(path: Path | str, *, limit: int, what: str, fix: str = "") -> bytes:
    """The bytes of the input file ``path``: a regular file of at most ``limit`` bytes, or standard
    input when ``path`` is ``"-"``. The bound is enforced while reading (``st_size`` says 0 for a
    FIFO or a device), and the file is opened without blocking, so that a FIFO with no writer is
    refused instead of waited on. ``what`` names the input in the message ("the receipt of X").

    Raises FileNotFoundError for a missing file (callers say what it means to be missing), and
    :class:`InputError` (exit 3) for everything else: not a regular file, too large, unreadable."""
    if str(path) == STDIN:
        raw = sys.stdin.buffer.read(limit + 1)
        name = "standard input"
    else:
        name = shown(str(path))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            try:
                mode = os.fstat(fd).st_mode
                if not stat.S_ISREG(mode):
                    raise InputError(
                        f"{what} is not a file",
                        why=f"{name} is {kind_of(mode)}; tfbuild reads regular files only",
                        fix=fix,
                    )
                os.set_blocking(fd, True)
                with open(fd, "rb", closefd=False) as handle:
                    raw = handle.read(limit + 1)  # to the bound or the end, however many reads
            finally:
                os.close(fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise InputError(
                f"cannot read {what}", why=f"{name}: {exc.strerror or exc}", fix=fix
            ) from None
    if len(raw) > limit:
        raise InputError(
            f"{what} is too large", why=f"{name} is larger than {_size(limit)}", fix=fix
        )
    return raw


def _size(limit: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if limit >= 1 << shift and limit % (1 << shift) == 0:
            return f"{limit >> shift} {unit}"
    return f"{limit} bytes"


@contextmanager
def replacing(path: Path, *, mode: int = 0o644) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success it becomes ``path`` (with ``mode``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    temp = Path(name)
    try:
        yield temp
        temp.chmod(mode)
        temp.replace(path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    with replacing(path, mode=mode) as temp:
        temp.write_text(text, encoding="utf-8", newline="\n")


def sha256_file(path: Path) -> str:
    """The file's sha256 in hex, read in 1 MiB blocks (wheels and contexts can be large)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_files(directory: Path) -> list[Path]:
    """The wheel files directly in ``directory``, sorted by name (temp and hidden files left out)."""
    return sorted(
        (
            p
            for p in directory.iterdir()
            if p.suffix == ".whl" and not p.name.startswith(".") and p.is_file()
        ),
        key=lambda p: p.name,
    )


#: Temp names of :func:`write_files`; a run killed mid-write can leave one behind, never a target.
TEMP_PREFIX = ".tfbuild-tmp-"
#: The signals :func:`held_signals` holds off: Ctrl-C and a polite stop.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM held off for a short step that must not stop half-way (the renames of a
    set): one that arrives meanwhile is acted on just after the step, by the handler that was in
    place (a Python exception such as KeyboardInterrupt, or the default action).

    The handlers are swapped for one that only notes the signal, rather than the signals blocked
    with ``pthread_sigmask``: a mask is per thread, and a signal sent to the process is delivered to
    any thread that does not block it (rich's refresh thread, a reader thread), whose C handler
    would still make the main thread run the Python handler in the middle of the step. Handlers
    belong to the main thread; elsewhere (a worker thread, where Python runs no handler) this holds
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum: int, _frame: object) -> None:
        caught.append(signum)

    try:
        # Each handler is put back, even when a signal arriving meanwhile raises from one put back.
        with ExitStack() as restore:
            for signum in HELD_SIGNALS:
                handler = signal.getsignal(signum)
                if handler is None or handler == signal.SIG_IGN:
                    continue  # not set from Python (left alone), or ignored anyway
                restore.callback(signal.signal, signum, handler)  # before the swap
                signal.signal(signum, note)
            yield
    finally:
        # Each once, in the order they came, also when the step failed: the first handler's
        # exception (KeyboardInterrupt, tfbuild's Interrupted) is raised from here.
        for pending in dict.fromkeys(caught):
            signal.raise_signal(pending)


def free_space(directory: Path) -> int:
    """The bytes an unprivileged user may still write on ``directory``'s filesystem."""
    found = os.statvfs(directory)
    return found.f_bavail * found.f_frsize


def human_size(size: int) -> str:
    """A size as a message says it: ``512 bytes``, ``44 KiB``, ``1.2 MiB``, ``3.4 GiB``."""
    for unit, shift, places in (("GiB", 30, ".1f"), ("MiB", 20, ".1f"), ("KiB", 10, ".0f")):
        if size >= 1 << shift:
            return f"{size / (1 << shift):{places}} {unit}"
    return f"{size} bytes"


def utc_stamp(now: datetime | None = None) -> str:
    """A time (by default now, in UTC) as a build id or a log's name holds it: ``20261123-091502``."""
    return (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")


#: What :func:`write_files` puts in place: text, bytes, or an existing file (by its path) moved in.
Content = str | bytes | Path


def write_files(
    directory: Path, files: Mapping[str, tuple[Content, int]], *, key_last: bool = False
) -> list[Path]:
    """Write a set of files into ``directory`` as one step: all of them, or none changed.

    ``files`` maps a plain file name to ``(content, mode)``, in the order they are put in place (a
    manifest goes last). A content that is a ``Path`` is an existing file taken in as it is: hard
    linked under the temp name when it is on the same filesystem (no copy, whatever its size; its
    mode becomes ``mode``), copied otherwise; the caller removes the original.

    Every target is checked first (a directory in a target's place stops it all), then each file is
    written whole under a temp name beside its target and, once all are written, renamed into place
    with SIGINT and SIGTERM held off (:func:`held_signals`). Should a rename still fail, the ones
    already renamed get their previous content back (kept as hard links until the end), so a failure
    leaves the previous set as it was.

    ``key_last``: the last file is the set's key, which readers take the others as belonging to (a
    wheel, whose receipt and env file sit beside it). Its previous version is taken out of view
    before any other file is replaced and the new one comes last, so that whenever the key is
    visible the files beside it are its own: never a new receipt beside an old wheel, nor a receipt
    whose wheel is not there yet. On a failure the previous key comes back with the rest.

    Raises OSError with the failing path in ``filename``; no temp file stays behind."""
    targets = [(directory / name, content, mode) for name, (content, mode) in files.items()]
    for target, _content, _mode in targets:
        if target.is_dir() and not target.is_symlink():
            raise IsADirectoryError(errno.EISDIR, "it is a directory, not a file", str(target))
    temps: list[Path] = []
    try:
        for target, content, mode in targets:
            with _naming(target):
                _stage(directory, target, content, mode, temps)
        moves = [(temp, target) for temp, (target, _c, _m) in zip(temps, targets, strict=True)]
        with held_signals():
            _put_in_place(directory, moves, key_last=key_last)
    finally:
        with held_signals():
            for leftover in temps:
                leftover.unlink(missing_ok=True)
    return [target for target, _content, _mode in targets]


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An OSError inside names ``path``: the file the user knows, not a temp name."""
    try:
        yield
    except OSError as exc:
        exc.filename = str(path)
        raise


def _stage(directory: Path, target: Path, content: Content, mode: int, temps: list[Path]) -> None:
    """``content`` under a new temp name beside ``target``, whole, with ``mode``; the temp name is
    added to ``temps`` as it is made (signals held), so that it is removed on any way out."""
    if isinstance(content, Path):
        temp = directory / f"{TEMP_PREFIX}{target.name}.{secrets.token_hex(6)}"
        with held_signals():  # a link takes microseconds
            try:
                os.link(content, temp, follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
            else:
                temps.append(temp)
                temp.chmod(mode)
                return
    with held_signals():
        fd, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{target.name}.", dir=directory)
        temps.append(Path(name))
        handle = os.fdopen(fd, "wb")
    with handle:
        if isinstance(content, Path):  # another filesystem: a copy
            with content.open("rb") as source:
                shutil.copyfileobj(source, handle, 1 << 20)
        else:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.fchmod(handle.fileno(), mode)


def _put_in_place(directory: Path, moves: list[tuple[Path, Path]], *, key_last: bool) -> None:
    """Rename each temp onto its target (see :func:`write_files`), the previous set restored on any
    failure. The caller holds the signals off."""
    backups: dict[Path, Path] = {}
    placed: list[Path] = []
    withdrawn: Path | None = None
    try:
        for _temp, target in moves:
            if os.path.lexists(target):  # a file or a link (a directory was refused above)
                backup = directory / f"{TEMP_PREFIX}{target.name}.{secrets.token_hex(6)}.old"
                with _naming(target):
                    os.link(target, backup, follow_symlinks=False)
                backups[target] = backup
        key = moves[-1][1] if key_last and moves else None
        if key is not None and key in backups:
            with _naming(key):
                key.unlink()  # out of view first: nothing beside it is replaced while it is seen
            withdrawn = key
        for temp, target in moves:
            with _naming(target):
                temp.replace(target)
            placed.append(target)
    except BaseException:
        if withdrawn is not None and withdrawn not in placed:
            placed.append(withdrawn)  # restored below with the others
        for target in reversed(placed):
            if target in backups:
                backups.pop(target).replace(target)
            else:
                target.unlink(missing_ok=True)
        raise
    finally:
        for backup in backups.values():
            backup.unlink(missing_ok=True)


#: Taken while files are published into (or updated in, or indexed in) a dist/ directory.
DIST_LOCK = ".tfbuild.lock"


@contextmanager
def locked(path: Path, *, blocking: bool = True, busy: str = "", fix: str = "") -> Iterator[None]:
    """Hold the exclusive lock of the lock file ``path`` (``flock``), created when missing and
    removed when released, so that no lock file is left behind.

    Removal never lets two holders in at once: only the holder removes the file, while it still
    holds it, and whoever then gets the lock of the removed file sees that ``path`` no longer names
    it (``fstat`` against ``stat``) and starts again with the file now there. The file is opened
    without following a link, and must be a regular file.

    Not ``blocking``: a held lock is :class:`EnvironmentProblem` ``busy`` (exit 5) with ``fix``.
    Raises OSError when the file cannot be opened (the directory is read-only, or missing)."""
    fd = -1  # changed only inside held_signals, so that a signal never finds it half-changed
    try:
        while True:
            with held_signals():  # no signal between making the file and owning its removal
                fd = _open_lock(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                raise EnvironmentProblem(busy, fix=fix) from None
            if _names(path, fd):
                break
            with held_signals():  # the lock of a file its holder removed: take the one there now
                os.close(fd)
                fd = -1
        yield
    finally:
        # Given back whole whatever signals come. Python acts on a signal only at a call or a
        # loop's jump back, never between the plain statements here, so every call is inside the
        # try: one that lands before the signals are held (at the entry of a function called here)
        # is kept, the step done, and then it is raised. The step itself runs with them held.
        pending: KeyboardInterrupt | None = None
        while fd >= 0:
            try:
                with held_signals():
                    if fd >= 0:
                        _give_back(path, fd)
                        fd = -1
            except KeyboardInterrupt as exc:  # a signal's (stopping.Stopped), before or after it
                pending = pending or exc
        if pending is not None:
            raise pending


def _give_back(path: Path, fd: int) -> None:
    """Give the lock file ``fd`` back: removed if this process holds its lock (flock taken again
    without waiting: the holder alone removes it), then closed; tried once, never retried."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # another process holds it (this one was still waiting): its file
    else:
        if _names(path, fd):
            # Left where the directory became read-only, or is not ours (sticky).
            with suppress(OSError):
                path.unlink()
    finally:
        os.close(fd)


def _open_lock(path: Path) -> int:
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_RDWR, 0o666)
    except PermissionError:
        fd = os.open(path, flags | os.O_RDONLY)  # another user's lock file: read is enough here
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        kind = kind_of(os.fstat(fd).st_mode)
        os.close(fd)
        raise InputError(
            f"{shown(str(path))} is not a lock file",
            why=f"it is {kind}",
            fix="Remove it; tfbuild makes its lock files itself.",
        )
    return fd


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not removed, not replaced)."""
    try:
        found = path.lstat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino)


def shown(name: str) -> str:
    """A file name as a message may quote it: printable ASCII kept, everything else escaped
    (``\\n``, ``\\x1b``, ``\\u202e``; a byte that is not UTF-8, kept by Python as a surrogate,
    as ``\\xe9``), so a hostile name can neither break the line nor drive the terminal."""
    out = []
    for char in name:
        code = ord(char)
        if 0x20 <= code < 0x7F and char != "\\":
            out.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape of one raw byte
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


#: What reading a damaged zip member (a wheel's) raises: zipfile's own checks (a bad CRC, a bad local
#: header), the decompressors' (zlib, lzma; bz2 raises OSError), a stream that ends early
#: (EOFError), a method zipfile does not implement, an encrypted member (RuntimeError), and the
#: file's own I/O errors. Catch them around a member's read, and name the member.
ZIP_MEMBER_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    OSError,
)
