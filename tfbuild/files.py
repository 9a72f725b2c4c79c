"""Writing files whole: a temp name in the same directory, then an atomic rename.

Nothing tfbuild writes is ever seen half-written, and a failure leaves no temp file behind.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
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
