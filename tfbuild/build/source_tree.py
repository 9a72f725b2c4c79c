"""Where the TensorFlow source tree of a build comes from.

Two ways:

1. ``--source DIR`` (:func:`local_source`): a local checkout, of TensorFlow or of any fork. It is
   used as it is; tfbuild only checks that it looks like a TensorFlow tree and, for a git checkout,
   records its commit and whether it has uncommitted changes.
2. The recipe's release tarball (:func:`fetch_source`): downloaded once into a cache that is keyed by
   content, verified against its sha256 before every use, then extracted once.

The cache (``~/.cache/tfbuild/sources`` by default: :func:`tfbuild.core.cache.cache_root`) names
every entry by a sha256, never by a TensorFlow version or a file name (its layout:
:mod:`tfbuild.build.source_cache`).
A pinned sha256 (the recipe's ``source.sha256`` or ``--source-sha256``) names its entry directly, and
the entry is used only when its tarball hashes to the pin: a tarball that another recipe put in the
cache, from another URL, can never stand in for this one. Without a pin, the first download of a
URL records the sha256 of what it served; every later use of that URL is checked against that
record, and an upstream that now serves other bytes is an error naming both checksums.

Entries of the earlier per-version layout (``tensorflow-2.21.0.tar.gz``, its ``.sha256`` record and
``tensorflow-2.21.0-<sha256[:12]>/``) are ignored: nothing reads them, and they can be deleted.

Everything is written under a ``.partial-<pid>`` name (or another temp name) and renamed into place,
so an interrupted run (Ctrl-C included) leaves nothing half-written, and two runs sharing the cache
never see each other's partial work.

This module decides; one module a job does the rest: :mod:`~tfbuild.build.local_tree` (a local
directory: its checks, git state and times), :mod:`~tfbuild.build.source_cache` (the cache's
layout, records, markers), :mod:`~tfbuild.build.source_download` (the download, through
:mod:`tfbuild.core.http`, tfbuild's one HTTP client), :mod:`~tfbuild.build.tarball` (safe
extraction).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tfbuild.build import local_tree, source_download, tarball
from tfbuild.build.source_cache import (
    COMPLETE,
    SHA256,
    Marker,
    SourceCache,
    cache_problem,
    file_sha256,
    install_tree,
    partial,
    remove_tree,
    tree_root,
)
from tfbuild.core.cache import SOURCES, cache_root
from tfbuild.core.errors import InputError
from tfbuild.wheel.receipt import SourceRecord

#: What a TensorFlow source tree has and other trees do not.
SOURCE_MARKER = "tensorflow/tools/pip_package"


@dataclass(frozen=True, kw_only=True)
class Source:
    """A TensorFlow source tree, and where it came from."""

    #: The tree to mount as the build's source directory (absolute).
    path: Path
    kind: Literal["directory", "tarball"]
    #: The directory as given (absolute), or the tarball's URL.
    origin: str
    #: The tarball's sha256 (None for a directory).
    sha256: str | None
    #: True when the sha256 was pinned (by the recipe or --source-sha256); False when it was
    #: recorded at the first download (trust on first use), and for directories.
    pinned: bool
    #: HEAD of a git checkout, else None.
    git_commit: str | None
    #: Whether a git checkout has uncommitted changes to tracked files, else None.
    git_dirty: bool | None
    #: The source's time (SOURCE_DATE_EPOCH): a tarball's newest member mtime, a git checkout's
    #: HEAD commit time, another directory's newest file mtime; None when there is none.
    epoch: int | None

    def record(self) -> SourceRecord:
        """The receipt's record of this source: a tarball by URL and sha256, a directory by path
        (and commit)."""
        tarball = self.kind == "tarball"
        return SourceRecord(
            kind=self.kind,
            url=self.origin if tarball else None,
            sha256=self.sha256,
            pinned=self.pinned,
            path=None if tarball else str(self.path),
            commit=self.git_commit,
            dirty=self.git_dirty,
            epoch=self.epoch,
        )


# --- 1. a local directory ----------------------------------------------------------------------


def local_source(path: Path) -> Source:
    """The checkout at ``path``; InputError unless it is a directory with a SOURCE_MARKER
    subdirectory."""
    path = path.absolute()
    local_tree.check_tree(path, SOURCE_MARKER)
    commit, dirty = local_tree.git_state(path) if (path / ".git").exists() else (None, None)
    epoch = local_tree.git_epoch(path) if commit is not None else None
    return Source(
        path=path,
        kind="directory",
        origin=str(path),
        sha256=None,
        pinned=False,
        git_commit=commit,
        git_dirty=dirty,
        epoch=epoch if epoch is not None else _epoch(local_tree.newest_mtime(path)),
    )


def _epoch(value: float | None) -> int | None:
    """A SOURCE_DATE_EPOCH from a time: whole seconds, never negative."""
    return int(value) if value is not None and value >= 0 else None


# --- 2. the recipe's release tarball -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Fetch:
    """One call of :func:`fetch_source`: what to download, where to, and how."""

    url: str
    version: str
    cache: SourceCache
    pinned: bool
    ca_bundle: Path | None
    timeout: float
    on_line: Callable[[str], None]


def fetch_source(
    url: str,
    *,
    version: str,
    sha256: str | None,
    cache_dir: Path | None = None,
    ca_bundle: Path | None = None,
    on_line: Callable[[str], None] = lambda _l: None,
    timeout: float = source_download.SOURCE_TIMEOUT_S,
) -> Source:
    """The release tarball at ``url``, downloaded, verified and extracted into ``cache_dir``
    (default: the user's cache).

    ``sha256`` pins the tarball (None: trusted on first use, as above). ``version`` only appears
    in messages. A verified tarball already in the cache is reused without any network access.
    ``timeout`` bounds each connect and read of the download (the whole of it:
    :data:`~tfbuild.build.source_download.SOURCE_DEADLINE_S`). Raises InputError for a checksum
    mismatch or a bad archive, EnvironmentProblem when the download fails or the cache cannot be
    written.
    """
    pinned = _pinned_sha256(sha256)
    fetch = _Fetch(
        url=url,
        version=version,
        cache=SourceCache.at(cache_dir or cache_root() / SOURCES),
        pinned=pinned is not None,
        ca_bundle=ca_bundle,
        timeout=timeout,
        on_line=on_line,
    )
    actual = _pinned_tarball(fetch, pinned) if pinned is not None else _first_seen_tarball(fetch)
    epoch = _extracted(fetch, actual)
    return Source(
        path=tree_root(fetch.cache.tree(actual)),
        kind="tarball",
        origin=url,
        sha256=actual,
        pinned=fetch.pinned,
        git_commit=None,
        git_dirty=None,
        epoch=epoch,
    )


def _pinned_sha256(sha256: str | None) -> str | None:
    if sha256 is None:
        return None
    value = sha256.strip().lower()
    if not SHA256.fullmatch(value):
        raise InputError(
            f"the pinned sha256 {sha256!r} is not a sha256",
            why="expected 64 hexadecimal digits",
            fix="Check the recipe's source.sha256 (or --source-sha256).",
        )
    return value


# --- which tarball: pinned, or trusted on first use ---


def _pinned_tarball(fetch: _Fetch, pinned: str) -> str:
    """Make sure the cache holds the tarball whose sha256 is ``pinned``; a cached one that does
    not match (damaged, or tampered with) is deleted with its tree and downloaded again."""
    tarball_path = fetch.cache.tarball(pinned)
    if os.path.lexists(tarball_path):
        if file_sha256(tarball_path) == pinned:
            return pinned
        fetch.on_line(f"{tarball_path} does not match its sha256; downloading it again")
        fetch.cache.discard_entry(pinned)
    return _download_into_cache(fetch, pinned)


def _first_seen_tarball(fetch: _Fetch) -> str:
    """The tarball of an unpinned URL: verified against the sha256 recorded at the URL's first
    download, or downloaded and recorded now. A cached tarball that does not match its record is
    refused (the record is the only witness of what the URL served)."""
    recorded = fetch.cache.recorded_sha256(fetch.url, fetch.on_line)
    if recorded is None:
        actual = _download_into_cache(fetch, None)
        _record_sha256(fetch, actual)
        fetch.on_line(
            f"the recipe pins no sha256 for {fetch.url}: recorded {actual} at this first "
            "download; later runs verify against it"
        )
        return actual
    tarball_path = fetch.cache.tarball(recorded)
    if not os.path.lexists(tarball_path):
        return _download_into_cache(fetch, recorded)
    found = file_sha256(tarball_path)
    if found == recorded:
        return recorded
    record = fetch.cache.record(fetch.url)
    raise InputError(
        f"the cached tarball {tarball_path} does not match the sha256 recorded at the first "
        f"download of {fetch.url}",
        why=f"expected {recorded} (in {record}), got {found or 'an unreadable file'}",
        fix=f"The cache was damaged or tampered with: delete {tarball_path} and "
        f"{fetch.cache.tree(recorded)}, then rerun to download it again (it is verified "
        "against the same record).",
    )


def _record_sha256(fetch: _Fetch, sha256: str) -> None:
    """Record what ``fetch.url`` served at its first download (unless a run sharing the cache
    recorded it meanwhile: then that record must agree)."""
    recorded = fetch.cache.recorded_sha256(fetch.url, fetch.on_line)
    if recorded is None:
        fetch.cache.write_record(fetch.url, sha256)
    elif recorded != sha256:
        raise _mismatch(fetch, recorded, sha256)


def _download_into_cache(fetch: _Fetch, expected: str | None) -> str:
    """Download the tarball, check it against ``expected`` (when there is one) and store it under
    its own sha256; that sha256."""
    objects = fetch.cache.objects
    into = partial(objects / "download")
    try:
        objects.mkdir(parents=True, exist_ok=True)
        actual = source_download.download_to(
            fetch.url,
            into,
            ca_bundle=fetch.ca_bundle,
            timeout=fetch.timeout,
            on_line=fetch.on_line,
        )
        if expected is not None and actual != expected:
            raise _mismatch(fetch, expected, actual)
        into.replace(fetch.cache.tarball(actual))
    except OSError as exc:
        raise cache_problem(f"cannot write to the source cache {fetch.cache.dir}", exc) from None
    finally:
        into.unlink(missing_ok=True)
    return actual


def _mismatch(fetch: _Fetch, expected: str, actual: str) -> InputError:
    if fetch.pinned:
        return InputError(
            f"the download of {fetch.url} does not match its pinned sha256",
            why=f"expected {expected}, got {actual}",
            fix="Check the recipe's source.sha256 and the network (a proxy rewriting downloads?); "
            "rerun to download again.",
        )
    record = fetch.cache.record(fetch.url)
    return InputError(
        f"the download of {fetch.url} does not match the sha256 recorded at its first download",
        why=f"expected {expected} (in {record}), got {actual}",
        fix=f"Check the network (a proxy rewriting downloads?); if the release was published "
        f"again, pin the new sha256 in the recipe's source.sha256, or delete {record} to trust "
        "the new download.",
    )


# --- extracting ---


def _extracted(fetch: _Fetch, sha256: str) -> int | None:
    """Make sure the verified tarball is extracted into its tree in the cache (unless a run did
    already); the source's epoch, from the tree's marker."""
    tree = fetch.cache.tree(sha256)
    marker = Marker.read(tree)
    if marker is not None and marker.sha256 == sha256:
        return marker.epoch
    if os.path.lexists(tree):
        remove_tree(tree)  # no tfbuild run leaves a tree without its marker: a stray copy
    tarball.check_supported()
    tarball_path = fetch.cache.tarball(sha256)
    into = partial(tree)
    fetch.on_line(f"extracting TensorFlow {fetch.version} ({tarball_path.name}) into {tree}")
    try:
        remove_tree(into)  # left by a killed run that had the same process id
        into.mkdir()
        epoch = _unpack(fetch, sha256, into)
        (into / COMPLETE).write_text(Marker(sha256=sha256, epoch=epoch).text(), encoding="utf-8")
        return install_tree(into, tree, epoch)
    except OSError as exc:
        raise cache_problem(f"cannot extract {tarball_path} into {tree}", exc) from None
    finally:
        remove_tree(into)


def _unpack(fetch: _Fetch, sha256: str, into: Path) -> int | None:
    """Extract the archive into ``into``; its epoch. A bad archive is deleted from the cache, with
    the URL's trust-on-first-use record (InputError), so that a rerun downloads it afresh."""
    try:
        return _epoch(tarball.extract_archive(fetch.cache.tarball(sha256), into))
    except tarball.UNSAFE as exc:
        _discard_download(fetch, sha256)
        raise InputError(
            f"the archive downloaded from {fetch.url} is unsafe to extract",
            why=str(exc),
            fix="TensorFlow's release archives have no such members: check the recipe's "
            "source.tarball, or pass --source DIR with a TensorFlow checkout.",
        ) from None
    except tarball.UNREADABLE as exc:
        _discard_download(fetch, sha256)
        raise InputError(
            f"the archive downloaded from {fetch.url} cannot be extracted",
            why=str(exc) or type(exc).__name__,
            fix="It was deleted from the cache: rerun to download it again; if this repeats, "
            "check the recipe's source.tarball and source.sha256.",
        ) from None


def _discard_download(fetch: _Fetch, sha256: str) -> None:
    remove_tree(fetch.cache.tarball(sha256))
    if not fetch.pinned:
        remove_tree(fetch.cache.record(fetch.url))
