"""The source cache: every entry named by a sha256, written under a temporary name and renamed.

The layout (:class:`SourceCache`, under :func:`tfbuild.build.source_tree.fetch_source`'s cache)::

    sha256/<sha256>.tar.gz          a verified download, named by its own sha256
    sha256/<sha256>/                its extracted tree; the .complete marker (JSON: the sha256 and
                                    the source's epoch) is written last
    urls/<sha256 of the URL>.json   trust on first use: {url, sha256, first_seen} of a URL that no
                                    pin covers

The cache's own files are input like any other (a run sharing the cache, a user, a full disk may
have left anything there): records and markers are read by the one bounded reader and a malformed
one is no record. What decides which entry a build uses is :mod:`tfbuild.build.source_tree`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from tfbuild.core.errors import EnvironmentProblem, InputError
from tfbuild.core.files import read_input, sha256_file, write_text

SHA256 = re.compile(r"[0-9a-f]{64}")
COMPLETE = ".complete"
#: A sha256 record and a tree's marker are a line of JSON; more is not one.
_MAX_RECORD_BYTES = 64 * 1024
_CACHE_FIX = "Free some space there, or set TFBUILD_CACHE_DIR to another directory."


@dataclass(frozen=True, kw_only=True)
class SourceCache:
    """The cache's entries, each named by a sha256: of a tarball's content, or of a URL."""

    dir: Path

    @staticmethod
    def at(cache_dir: Path) -> SourceCache:
        """The cache in ``cache_dir`` (made absolute), created if need be."""
        cache_dir = cache_dir.absolute()
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot create the source cache {cache_dir}",
                why=exc.strerror or str(exc),
                fix="Set TFBUILD_CACHE_DIR to a writable directory.",
            ) from None
        return SourceCache(dir=cache_dir)

    @property
    def objects(self) -> Path:
        return self.dir / "sha256"

    def tarball(self, sha256: str) -> Path:
        return self.objects / f"{sha256}.tar.gz"

    def tree(self, sha256: str) -> Path:
        return self.objects / sha256

    def record(self, url: str) -> Path:
        """The trust-on-first-use record of ``url``."""
        name = hashlib.sha256(url.encode("utf-8")).hexdigest()
        return self.dir / "urls" / f"{name}.json"

    def recorded_sha256(self, url: str, on_line: Callable[[str], None]) -> str | None:
        """The sha256 recorded at ``url``'s first download, or None. A record there that is no
        record of ``url`` is deleted, and ``on_line`` says so."""
        record = self.record(url)
        try:
            raw = read_input(record, limit=_MAX_RECORD_BYTES, what=f"the record {record}")
            data = json.loads(raw)
        except FileNotFoundError:
            return None
        except (InputError, UnicodeDecodeError, ValueError):  # a FIFO or a device too: discarded
            data = None
        data = data if isinstance(data, dict) else {}
        sha256 = data.get("sha256")
        if data.get("url") == url and isinstance(sha256, str) and SHA256.fullmatch(sha256):
            return sha256
        remove_tree(record)
        on_line(f"discarding {record}: it is no sha256 record of {url}; downloading again")
        return None

    def write_record(self, url: str, sha256: str) -> None:
        """Record that ``url`` served ``sha256`` at its first download, now."""
        record = self.record(url)
        first_seen = datetime.now(timezone.utc).isoformat(timespec="seconds")
        data = {"url": url, "sha256": sha256, "first_seen": first_seen}
        try:
            write_text(record, json.dumps(data, indent=2) + "\n")
        except OSError as exc:
            raise cache_problem(f"cannot write {record}", exc) from None

    def discard_entry(self, sha256: str) -> None:
        """Delete a cached tarball and the tree extracted from it."""
        remove_tree(self.tarball(sha256))
        remove_tree(self.tree(sha256))


@dataclass(frozen=True, kw_only=True)
class Marker:
    """The ``.complete`` marker of an extracted tree, written last: what it holds, and its epoch."""

    sha256: str
    epoch: int | None

    def text(self) -> str:
        return json.dumps({"sha256": self.sha256, "epoch": self.epoch}, sort_keys=True) + "\n"

    @staticmethod
    def read(tree: Path) -> Marker | None:
        """The tree's marker, or None when it has none or a malformed one."""
        try:
            raw = read_input(tree / COMPLETE, limit=_MAX_RECORD_BYTES, what="the tree's marker")
            data = json.loads(raw)
        except (OSError, InputError, UnicodeDecodeError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        sha256, epoch = data.get("sha256"), data.get("epoch")
        if not isinstance(sha256, str) or not SHA256.fullmatch(sha256):
            return None
        if epoch is not None and (type(epoch) is not int or epoch < 0):
            return None
        return Marker(sha256=sha256, epoch=epoch)


def tree_root(tree: Path) -> Path:
    """The archive's single top-level directory, or ``tree`` itself when it has several entries."""
    entries = [entry for entry in tree.iterdir() if entry.name != COMPLETE]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return tree


def install_tree(partial: Path, tree: Path, epoch: int | None) -> int | None:
    """Rename the extracted ``partial`` to ``tree``; if another run got there first, keep theirs.
    The epoch of the tree in place."""
    try:
        partial.replace(tree)
    except OSError:
        theirs = Marker.read(tree)
        if theirs is not None:
            return theirs.epoch  # the caller deletes ours
        raise
    return epoch


def partial(path: Path) -> Path:
    """Where this process writes ``path`` before renaming it into place."""
    return path.with_name(f"{path.name}.partial-{os.getpid()}")


def file_sha256(path: Path) -> str | None:
    """The file's sha256, or None when it cannot be read."""
    try:
        return sha256_file(path)
    except OSError:
        return None


def remove_tree(path: Path) -> None:
    """Delete ``path`` (a file or a tree) if it exists, read-only directories included; what
    cannot be deleted stays (the next step that needs the name fails with a clear message)."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return
    # The data filter keeps an archive's directory modes, which may lack the owner's write bit.
    with contextlib.suppress(OSError):
        path.chmod(0o700)
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            sub = Path(root, name)
            if not sub.is_symlink():
                with contextlib.suppress(OSError):
                    sub.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def cache_problem(what: str, exc: OSError) -> EnvironmentProblem:
    return EnvironmentProblem(what, why=exc.strerror or str(exc), fix=_CACHE_FIX)
