"""Reading input files within bounds, and writing files whole.

Every file tfbuild reads from a user or a download (a receipt, a header file, a source tree's rc
files) goes through :func:`read_input`: a regular file (or an explicit ``-`` for standard input)
and at most ``limit`` bytes, counted while reading, so a FIFO, a device or ``/dev/zero`` behind a
link is one line and exit 3, never a hang or a MemoryError.

Writing: a temp name in the same directory, then an atomic rename. Nothing tfbuild writes is ever
seen half-written, and a failure leaves no temp file behind.
"""

from __future__ import annotations

import errno
import hashlib
import lzma
import os
import secrets
import stat
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tfbuild.errors import InputError

#: Standard input, where a command accepts it in place of a file.
STDIN = "-"


def _kind_of(mode: int) -> str:
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
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise InputError(
                f"cannot read {what}", why=f"{name}: {exc.strerror or exc}", fix=fix
            ) from None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise InputError(
                    f"{what} is not a file",
                    why=f"{name} is {_kind_of(mode)}; tfbuild reads regular files only",
                    fix=fix,
                )
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            size = 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            raw = b"".join(chunks)
        except OSError as exc:
            raise InputError(
                f"cannot read {what}", why=f"{name}: {exc.strerror or exc}", fix=fix
            ) from None
        finally:
            os.close(fd)
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


def write_files(directory: Path, files: Mapping[str, tuple[str | bytes, int]]) -> list[Path]:
    """Write a set of files into ``directory`` as one step: all of them, or none changed.

    ``files`` maps a plain file name to ``(content, mode)``, in the order they are put in place (a
    manifest goes last). Every target is checked first (a directory in a target's place stops it
    all), then each file is written whole under a temp name beside its target and, once all are
    written, renamed into place. Should a rename still fail, the ones already renamed get their
    previous content back (kept as hard links until the end), so a failure leaves the previous set
    as it was. Raises OSError with the failing path in ``filename``; no temp file stays behind."""
    targets = [(directory / name, content, mode) for name, (content, mode) in files.items()]
    for target, _content, _mode in targets:
        if target.is_dir() and not target.is_symlink():
            raise IsADirectoryError(errno.EISDIR, "it is a directory, not a file", str(target))
    temps: list[Path] = []
    backups: dict[Path, Path] = {}
    try:
        for target, content, mode in targets:
            try:
                fd, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{target.name}.", dir=directory)
                temps.append(Path(name))
                with os.fdopen(fd, "wb") as handle:
                    handle.write(content.encode("utf-8") if isinstance(content, str) else content)
                    os.fchmod(handle.fileno(), mode)
            except OSError as exc:
                exc.filename = str(target)  # the file the user knows, not its temp name
                raise
        for target, _content, _mode in targets:
            if os.path.lexists(target):  # a file or a link (a directory was refused above)
                backup = directory / f"{TEMP_PREFIX}{target.name}.{secrets.token_hex(6)}.old"
                os.link(target, backup, follow_symlinks=False)
                backups[target] = backup
        placed: list[Path] = []
        try:
            for temp, (target, _content, _mode) in zip(temps, targets, strict=True):
                try:
                    temp.replace(target)
                except OSError as exc:
                    exc.filename = str(target)
                    raise
                placed.append(target)
        except BaseException:
            for target in reversed(placed):
                if target in backups:
                    backups.pop(target).replace(target)
                else:
                    target.unlink(missing_ok=True)
            raise
    finally:
        for leftover in (*temps, *backups.values()):
            leftover.unlink(missing_ok=True)
    return [target for target, _content, _mode in targets]


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
