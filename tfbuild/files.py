"""Writing files whole: a temp name in the same directory, then an atomic rename.

Nothing tfbuild writes is ever seen half-written, and a failure leaves no temp file behind.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


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
