"""Extracting a source tarball safely: tarfile's ``data`` filter, absolute names refused too.

It knows nothing of the cache or of where the tarball came from: :mod:`tfbuild.build.source_tree`
says a refused archive in the build's words and deletes it from the cache.
"""

from __future__ import annotations

import gzip
import os
import tarfile
import zlib
from pathlib import Path

from tfbuild.core.errors import EnvironmentProblem


class _NoFilters(Exception):
    """Never raised: without tarfile's filters, :func:`check_supported` refuses to extract."""


#: An archive refused by the filter (a member outside the tree, a device, a link pointing out).
UNSAFE: type[Exception] = getattr(tarfile, "FilterError", _NoFilters)
#: An archive that cannot be read (not gzip, cut short, not tar). ``UNSAFE`` is caught first.
UNREADABLE: tuple[type[Exception], ...] = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


def check_supported() -> None:
    """EnvironmentProblem unless this Python's tarfile has extraction filters."""
    if not hasattr(tarfile, "data_filter"):
        raise EnvironmentProblem(
            "this Python cannot extract archives safely",
            why="its tarfile module has no extraction filters (Python 3.10.12 or 3.11.4 and later)",
            fix="Upgrade Python, or pass --source DIR with a TensorFlow checkout.",
        )


def extract_archive(tarball: Path, into: Path) -> float | None:
    """Extract ``tarball`` into ``into`` safely; the newest mtime among its members, or None when
    it has none. Raises ``UNSAFE`` or one of ``UNREADABLE`` for an archive it refuses."""
    with tarfile.open(tarball, "r:*") as archive:
        archive.extractall(into, filter=_safe_member)
        mtimes = [member.mtime for member in archive.getmembers()]
    return max(mtimes) if mtimes else None


def _safe_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """The ``data`` filter, which refuses members outside ``dest`` (``..``, links pointing out) and
    device files and clears setuid bits, and which also refuses absolute names (it would only
    strip their leading slash: no honest source archive has one)."""
    if member.name.startswith(("/", os.sep)):
        raise tarfile.AbsolutePathError(member)
    return tarfile.data_filter(member, dest)
