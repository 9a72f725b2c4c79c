"""Where the TensorFlow source tree of a build comes from.

Two ways:

1. ``--source DIR`` (:func:`local_source`): a local checkout, of TensorFlow or of any fork. It is
   used as it is; tfbuild only checks that it looks like a TensorFlow tree and, for a git checkout,
   records its commit and whether it has uncommitted changes.
2. The recipe's release tarball (:func:`fetch_source`): downloaded once into a cache that is keyed by
   content, verified against its sha256 before every use, then extracted once.

The cache (:func:`default_cache_dir`, ``~/.cache/tfbuild/sources`` by default) names every entry by
a sha256, never by a TensorFlow version or a file name::

    sha256/<sha256>.tar.gz          a verified download, named by its own sha256
    sha256/<sha256>/                its extracted tree; the .complete marker (JSON: the sha256 and
                                    the source's epoch) is written last
    urls/<sha256 of the URL>.json   trust on first use: {url, sha256, first_seen} of a URL that no
                                    pin covers

A pinned sha256 (the recipe's ``source.sha256`` or ``--source-sha256``) names its entry directly, and
the entry is used only when its tarball hashes to the pin: a tarball that another recipe put in the
cache, from another URL, can never stand in for this one. Without a pin, the first download of a
URL records the sha256 of what it served; every later use of that URL is checked against that
record, and an upstream that now serves other bytes is an error naming both checksums.

Entries of the earlier per-version layout (``tensorflow-2.21.0.tar.gz``, its ``.sha256`` record and
``tensorflow-2.21.0-<sha256[:12]>/``) are ignored: nothing reads them, and they can be deleted.

The source's epoch (:attr:`Source.epoch`, the build's ``SOURCE_DATE_EPOCH``) is the newest member
mtime of a tarball, the HEAD commit's time of a git checkout, or the newest file mtime of any other
directory.

Everything is written under a ``.partial-<pid>`` name (or another temp name) and renamed into place,
so an interrupted run (Ctrl-C included) leaves nothing half-written, and two runs sharing the cache
never see each other's partial work.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import shutil
import ssl
import subprocess
import tarfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from http.client import HTTPException
from pathlib import Path
from typing import BinaryIO, Literal

from tfbuild import __version__
from tfbuild.core.errors import EnvironmentProblem, InputError, Unreachable
from tfbuild.core.files import read_input, sha256_file, write_text
from tfbuild.wheel.receipt import SourceRecord

#: What a TensorFlow source tree has and other trees do not.
SOURCE_MARKER = "tensorflow/tools/pip_package"
_CLONE_FIX = (
    "Pass the top of a TensorFlow checkout "
    "(e.g. git clone https://github.com/tensorflow/tensorflow)."
)
#: Honest about what a build needs: --source DIR skips this download only. The toolchain image
#: downloads packages (and bazelisk), and bazel downloads TensorFlow's dependencies in the build
#: container; tfbuild passes the proxy variables to both (and --ca-bundle to the build container).
_NETWORK_FIX = (
    "Check the URL and the network; behind a proxy set HTTPS_PROXY (and NO_PROXY), which the "
    "whole build uses. --source DIR with a TensorFlow checkout skips only this download: bazel "
    "still downloads TensorFlow's dependencies, so a build needs the network (or a proxy) anyway."
)
_CACHE_FIX = "Free some space there, or set TFBUILD_CACHE_DIR to another directory."
_CHUNK = 1 << 20
_MB = 1_000_000
#: Without a Content-Length, a progress line every this many bytes.
_UNSIZED_STEP = 50 * _MB
_COMPLETE = ".complete"
#: A sha256 record and a tree's marker are a line of JSON; more is not one.
_MAX_RECORD_BYTES = 64 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_EPOCH = re.compile(r"[0-9]+")


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


def default_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """``$TFBUILD_CACHE_DIR/sources``, else ``$XDG_CACHE_HOME/tfbuild/sources``, else
    ``~/.cache/tfbuild/sources``."""
    if env.get("TFBUILD_CACHE_DIR"):
        return Path(env["TFBUILD_CACHE_DIR"]) / "sources"
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore a relative path
        return Path(xdg) / "tfbuild" / "sources"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".cache" / "tfbuild" / "sources"


# --- 1. a local directory ----------------------------------------------------------------------


def local_source(path: Path, *, marker: str = SOURCE_MARKER) -> Source:
    """The checkout at ``path``; InputError unless it is a directory with a ``marker`` subdirectory."""
    path = path.absolute()
    _check_tree(path, marker)
    commit, dirty = _git_state(path) if (path / ".git").exists() else (None, None)
    epoch = _git_epoch(path) if commit is not None else None
    return Source(
        path=path,
        kind="directory",
        origin=str(path),
        sha256=None,
        pinned=False,
        git_commit=commit,
        git_dirty=dirty,
        epoch=epoch if epoch is not None else _newest_mtime(path),
    )


def _check_tree(path: Path, marker: str) -> None:
    what = f"cannot use {path} as the TensorFlow source"
    try:
        if not path.is_dir():
            why = "it is not a directory" if path.exists() else "it does not exist"
            raise InputError(what, why=why, fix=_CLONE_FIX)
        has_marker = (path / marker).is_dir()
    except OSError as exc:
        raise InputError(what, why=exc.strerror or str(exc), fix=_CLONE_FIX) from None
    if not has_marker:
        raise InputError(
            f"{path} does not look like a TensorFlow source tree",
            why=f"it has no {marker}",
            fix=_CLONE_FIX,
        )


def _git_state(path: Path) -> tuple[str | None, bool | None]:
    """HEAD and dirtiness of the checkout at ``path``; None for what git cannot tell."""
    head = _git(path, "rev-parse", "HEAD")
    commit = head.strip() if head is not None and _COMMIT.fullmatch(head.strip()) else None
    if commit is None:
        return None, None
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status.strip())


def _git_epoch(path: Path) -> int | None:
    """The HEAD commit's time (committer date, seconds since the epoch), or None."""
    out = _git(path, "log", "-1", "--format=%ct")
    text = out.strip() if out is not None else ""
    return int(text) if _EPOCH.fullmatch(text) else None


def _newest_mtime(root: Path) -> int | None:
    """The newest mtime among the files below ``root`` (symlinks not followed; ``.git`` and bazel's
    ``bazel-*`` output links left out), or None when there is no file."""
    newest: float | None = None
    for name_of_top, dirs, files in os.walk(root):  # Path.walk() needs Python 3.12
        top = Path(name_of_top)
        dirs[:] = [d for d in dirs if not _skipped(top / d)]
        for name in files:
            if _skipped(top / name):
                continue
            try:
                mtime = (top / name).lstat().st_mtime
            except OSError:
                continue
            newest = mtime if newest is None else max(newest, mtime)
    return _epoch(newest)


#: What a build writes into the tree itself: build.sh copies the rendered configure file there,
#: where TensorFlow's .bazelrc imports it. Counting it would move the next build's date.
BUILD_WRITES = frozenset({".tf_configure.bazelrc"})


def _skipped(path: Path) -> bool:
    """``.git`` (a directory, or a worktree's file), bazel's ``bazel-*`` output links and the
    files a build writes into the tree (BUILD_WRITES, at its top)."""
    return (
        path.name == ".git"
        or (path.name.startswith("bazel-") and path.is_symlink())
        or path.name in BUILD_WRITES
    )


def _epoch(value: float | None) -> int | None:
    """A SOURCE_DATE_EPOCH from a time: whole seconds, never negative."""
    return int(value) if value is not None and value >= 0 else None


def _git(path: Path, *args: str) -> str | None:
    """``git -C path ARGS``'s output, or None if git is missing, fails or hangs (never an error)."""
    # No optional locks: a status must not take index.lock while the user works in the checkout.
    # No discovery above ``path``: a directory whose .git is broken is not the repository around it.
    env = {
        **os.environ,
        "LC_ALL": "C",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_CEILING_DIRECTORIES": str(path.parent),
    }
    try:
        proc = subprocess.run(  # argv is built here, never by a shell
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


# --- 2. the recipe's release tarball -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Cache:
    """The cache's entries, each named by a sha256: of a tarball's content, or of a URL."""

    dir: Path

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


@dataclass(frozen=True, kw_only=True)
class _Fetch:
    """One call of :func:`fetch_source`: what to download, where to, and how."""

    url: str
    version: str
    cache: _Cache
    pinned: bool
    ca_bundle: Path | None
    timeout: float
    on_line: Callable[[str], None]


def fetch_source(
    url: str,
    *,
    version: str,
    sha256: str | None,
    cache_dir: Path,
    ca_bundle: Path | None = None,
    on_line: Callable[[str], None] = lambda _l: None,
    timeout: float = 60,
) -> Source:
    """The release tarball at ``url``, downloaded, verified and extracted into ``cache_dir``.

    ``sha256`` is the pinned checksum, which names the cache entry; without one, the first
    download's checksum is recorded for ``url`` and every later use is verified against it.
    ``version`` only appears in messages. A verified tarball already in the cache is reused without
    any network access. Raises InputError for a checksum mismatch or a bad archive,
    EnvironmentProblem when the download fails or the cache cannot be written.
    """
    pinned = _pinned_sha256(sha256)
    fetch = _Fetch(
        url=url,
        version=version,
        cache=_Cache(dir=_prepare_cache_dir(cache_dir)),
        pinned=pinned is not None,
        ca_bundle=ca_bundle,
        timeout=timeout,
        on_line=on_line,
    )
    actual = _pinned_tarball(fetch, pinned) if pinned is not None else _first_seen_tarball(fetch)
    epoch = _extracted(fetch, actual)
    return Source(
        path=_tree_root(fetch.cache.tree(actual)),
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
    if not _SHA256.fullmatch(value):
        raise InputError(
            f"the pinned sha256 {sha256!r} is not a sha256",
            why="expected 64 hexadecimal digits",
            fix="Check the recipe's source.sha256 (or --source-sha256).",
        )
    return value


def _prepare_cache_dir(cache_dir: Path) -> Path:
    cache_dir = cache_dir.absolute()
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot create the source cache {cache_dir}",
            why=exc.strerror or str(exc),
            fix="Set TFBUILD_CACHE_DIR to a writable directory.",
        ) from None
    return cache_dir


# --- which tarball: pinned, or trusted on first use ---


def _pinned_tarball(fetch: _Fetch, pinned: str) -> str:
    """Make sure the cache holds the tarball whose sha256 is ``pinned``; a cached one that does
    not match (damaged, or tampered with) is deleted with its tree and downloaded again."""
    tarball = fetch.cache.tarball(pinned)
    if os.path.lexists(tarball):
        if _file_sha256(tarball) == pinned:
            return pinned
        fetch.on_line(f"{tarball} does not match its sha256; downloading it again")
        _discard_entry(fetch.cache, pinned)
    return _download_into_cache(fetch, pinned)


def _first_seen_tarball(fetch: _Fetch) -> str:
    """The tarball of an unpinned URL: verified against the sha256 recorded at the URL's first
    download, or downloaded and recorded now. A cached tarball that does not match its record is
    refused (the record is the only witness of what the URL served)."""
    recorded = _recorded_sha256(fetch)
    if recorded is None:
        actual = _download_into_cache(fetch, None)
        _record_sha256(fetch, actual)
        fetch.on_line(
            f"the recipe pins no sha256 for {fetch.url}: recorded {actual} at this first "
            "download; later runs verify against it"
        )
        return actual
    tarball = fetch.cache.tarball(recorded)
    if not os.path.lexists(tarball):
        return _download_into_cache(fetch, recorded)
    found = _file_sha256(tarball)
    if found == recorded:
        return recorded
    record = fetch.cache.record(fetch.url)
    raise InputError(
        f"the cached tarball {tarball} does not match the sha256 recorded at the first download "
        f"of {fetch.url}",
        why=f"expected {recorded} (in {record}), got {found or 'an unreadable file'}",
        fix=f"The cache was damaged or tampered with: delete {tarball} and "
        f"{fetch.cache.tree(recorded)}, then rerun to download it again (it is verified "
        "against the same record).",
    )


def _recorded_sha256(fetch: _Fetch) -> str | None:
    """The sha256 recorded at the URL's first download, or None (a malformed record is discarded)."""
    record = fetch.cache.record(fetch.url)
    try:
        data = json.loads(read_input(record, limit=_MAX_RECORD_BYTES, what=f"the record {record}"))
    except FileNotFoundError:
        return None
    except (InputError, UnicodeDecodeError, ValueError):  # a FIFO or a device too: discarded
        data = None
    sha256 = data.get("sha256") if isinstance(data, dict) else None
    url = data.get("url") if isinstance(data, dict) else None
    if url == fetch.url and isinstance(sha256, str) and _SHA256.fullmatch(sha256):
        return sha256
    fetch.on_line(f"discarding {record}: it is no sha256 record of {fetch.url}; downloading again")
    _remove_tree(record)
    return None


def _record_sha256(fetch: _Fetch, sha256: str) -> None:
    """Record what ``fetch.url`` served at its first download (unless a run sharing the cache
    recorded it meanwhile: then that record must agree)."""
    recorded = _recorded_sha256(fetch)
    if recorded is not None:
        if recorded != sha256:
            raise _mismatch(fetch, recorded, sha256)
        return
    record = fetch.cache.record(fetch.url)
    first_seen = datetime.now(timezone.utc).isoformat(timespec="seconds")
    data = {"url": fetch.url, "sha256": sha256, "first_seen": first_seen}
    try:
        write_text(record, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise _cache_problem(f"cannot write {record}", exc) from None


# --- cache entries ---


@dataclass(frozen=True, kw_only=True)
class _Marker:
    """The ``.complete`` marker of an extracted tree, written last: what it holds, and its epoch."""

    sha256: str
    epoch: int | None

    def text(self) -> str:
        return json.dumps({"sha256": self.sha256, "epoch": self.epoch}, sort_keys=True) + "\n"

    @staticmethod
    def read(tree: Path) -> _Marker | None:
        """The tree's marker, or None when it has none or a malformed one."""
        try:
            raw = read_input(tree / _COMPLETE, limit=_MAX_RECORD_BYTES, what="the tree's marker")
            data = json.loads(raw)
        except (OSError, InputError, UnicodeDecodeError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        sha256, epoch = data.get("sha256"), data.get("epoch")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            return None
        if epoch is not None and (type(epoch) is not int or epoch < 0):
            return None
        return _Marker(sha256=sha256, epoch=epoch)


def _tree_root(tree: Path) -> Path:
    """The archive's single top-level directory, or ``tree`` itself when it has several entries."""
    entries = [entry for entry in tree.iterdir() if entry.name != _COMPLETE]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return tree


def _partial(path: Path) -> Path:
    """Where this process writes ``path`` before renaming it into place."""
    return path.with_name(f"{path.name}.partial-{os.getpid()}")


def _discard_entry(cache: _Cache, sha256: str) -> None:
    """Delete a cached tarball and the tree extracted from it."""
    _remove_tree(cache.tarball(sha256))
    _remove_tree(cache.tree(sha256))


def _remove_tree(path: Path) -> None:
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


# --- downloading and verifying ---


def _file_sha256(path: Path) -> str | None:
    """The file's sha256, or None when it cannot be read."""
    try:
        return sha256_file(path)
    except OSError:
        return None


def _download_into_cache(fetch: _Fetch, expected: str | None) -> str:
    """Download the tarball, check it against ``expected`` (when there is one) and store it under
    its own sha256; that sha256."""
    objects = fetch.cache.objects
    partial = _partial(objects / "download")
    try:
        objects.mkdir(parents=True, exist_ok=True)
        actual = _download(fetch, partial)
        if expected is not None and actual != expected:
            raise _mismatch(fetch, expected, actual)
        partial.replace(fetch.cache.tarball(actual))
    except OSError as exc:
        raise _cache_problem(f"cannot write to the source cache {fetch.cache.dir}", exc) from None
    finally:
        partial.unlink(missing_ok=True)
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


def _download(fetch: _Fetch, partial: Path) -> str:
    """Stream ``fetch.url`` into ``partial``; the sha256 of what arrived.

    urllib honours HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the environment by itself (its
    default ProxyHandler reads them), so nothing here deals with proxies.
    """
    request = _request(fetch.url)
    context = _ssl_context(fetch.ca_bundle)
    fetch.on_line(f"downloading {fetch.url}")
    with partial.open("wb") as out:
        try:
            with urllib.request.urlopen(
                request, timeout=fetch.timeout, context=context
            ) as response:
                length = _content_length(response.headers.get("Content-Length"))
                return _stream(fetch, response.read, length, out)
        except urllib.error.HTTPError as exc:
            exc.close()  # it holds the error page's open connection
            raise _network_problem(
                fetch, f"the server answered HTTP {exc.code} {exc.reason}"
            ) from None
        except urllib.error.URLError as exc:
            raise _network_problem(fetch, _reason(exc.reason, fetch.timeout)) from None
        except (OSError, HTTPException) as exc:  # a timeout or a reset connection while reading
            raise _network_problem(fetch, _reason(exc, fetch.timeout)) from None


def _request(url: str) -> urllib.request.Request:
    try:
        return urllib.request.Request(url, headers={"User-Agent": f"tfbuild/{__version__}"})
    except ValueError:
        raise InputError(
            f"cannot download {url!r}",
            why="it is not a URL",
            fix="Check the recipe's source.tarball.",
        ) from None


def _ssl_context(ca_bundle: Path | None) -> ssl.SSLContext:
    if ca_bundle is None:
        return ssl.create_default_context()
    try:
        return ssl.create_default_context(cafile=str(ca_bundle))
    except OSError as exc:  # ssl.SSLError included
        raise InputError(
            f"cannot use the CA bundle {ca_bundle}",
            why=exc.strerror or str(exc),
            fix="Pass a PEM file of CA certificates with --ca-bundle.",
        ) from None


def _content_length(header: str | None) -> int | None:
    try:
        length = int(header) if header is not None else None
    except ValueError:
        return None
    return length if length is not None and length > 0 else None


def _stream(fetch: _Fetch, read: Callable[[int], bytes], length: int | None, out: BinaryIO) -> str:
    """Copy ``read``'s chunks to ``out``, reporting progress; their sha256."""
    digest = hashlib.sha256()
    progress = _Progress(length, fetch.on_line)
    done = 0
    while chunk := read(_CHUNK):
        digest.update(chunk)
        try:
            out.write(chunk)
        except OSError as exc:
            raise _cache_problem(
                f"cannot write to the source cache {fetch.cache.dir}", exc
            ) from None
        done += len(chunk)
        progress.update(done)
    if length is not None and done < length:
        raise _network_problem(fetch, f"the download ended after {done} of {length} bytes")
    return digest.hexdigest()


class _Progress:
    """A progress line every 10 percent of the download, or every 50 MB when its size is unknown."""

    def __init__(self, length: int | None, on_line: Callable[[str], None]) -> None:
        self.length = length
        self.on_line = on_line
        self.step = max(length // 10, 1) if length is not None else _UNSIZED_STEP
        self.next = self.step

    def update(self, done: int) -> None:
        if done < self.next:
            return
        self.next = (done // self.step + 1) * self.step
        if self.length is None:
            self.on_line(f"downloaded {_megabytes(done)} MB")
        else:
            self.on_line(f"downloaded {_megabytes(done)} / {_megabytes(self.length)} MB")


def _megabytes(size: int) -> str:
    return f"{size / _MB:.0f}" if size >= 10 * _MB else f"{size / _MB:.1f}"


def _reason(reason: object, timeout: float) -> str:
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def _network_problem(fetch: _Fetch, why: str) -> Unreachable:
    fix = _NETWORK_FIX
    if "CERTIFICATE_VERIFY_FAILED" in why:
        fix = "Behind a proxy that inspects TLS, pass its CA certificates with --ca-bundle; " + fix
    return Unreachable(f"cannot download {fetch.url}", why=why, fix=fix)


def _cache_problem(what: str, exc: OSError) -> EnvironmentProblem:
    return EnvironmentProblem(what, why=exc.strerror or str(exc), fix=_CACHE_FIX)


# --- extracting ---


def _extracted(fetch: _Fetch, sha256: str) -> int | None:
    """Make sure the verified tarball is extracted into its tree in the cache (unless a run did
    already); the source's epoch, from the tree's marker."""
    tree = fetch.cache.tree(sha256)
    marker = _Marker.read(tree)
    if marker is not None and marker.sha256 == sha256:
        return marker.epoch
    if os.path.lexists(tree):
        _remove_tree(tree)  # no tfbuild run leaves a tree without its marker: a stray copy
    if not hasattr(tarfile, "data_filter"):
        raise EnvironmentProblem(
            "this Python cannot extract archives safely",
            why="its tarfile module has no extraction filters (Python 3.10.12 or 3.11.4 and later)",
            fix="Upgrade Python, or pass --source DIR with a TensorFlow checkout.",
        )
    tarball = fetch.cache.tarball(sha256)
    partial = _partial(tree)
    fetch.on_line(f"extracting TensorFlow {fetch.version} ({tarball.name}) into {tree}")
    try:
        _remove_tree(partial)  # left by a killed run that had the same process id
        partial.mkdir()
        epoch = _unpack(fetch, sha256, partial)
        (partial / _COMPLETE).write_text(
            _Marker(sha256=sha256, epoch=epoch).text(), encoding="utf-8"
        )
        return _install_tree(partial, tree, epoch)
    except OSError as exc:
        raise _cache_problem(f"cannot extract {tarball} into {tree}", exc) from None
    finally:
        _remove_tree(partial)


def _unpack(fetch: _Fetch, sha256: str, into: Path) -> int | None:
    """Extract the archive into ``into``; its epoch. A bad archive is deleted from the cache, with
    the URL's trust-on-first-use record (InputError), so that a rerun downloads it afresh."""
    try:
        return _extract_archive(fetch.cache.tarball(sha256), into)
    except tarfile.FilterError as exc:
        _discard_download(fetch, sha256)
        raise InputError(
            f"the archive downloaded from {fetch.url} is unsafe to extract",
            why=str(exc),
            fix="TensorFlow's release archives have no such members: check the recipe's "
            "source.tarball, or pass --source DIR with a TensorFlow checkout.",
        ) from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        _discard_download(fetch, sha256)
        raise InputError(
            f"the archive downloaded from {fetch.url} cannot be extracted",
            why=str(exc) or type(exc).__name__,
            fix="It was deleted from the cache: rerun to download it again; if this repeats, "
            "check the recipe's source.tarball and source.sha256.",
        ) from None


def _discard_download(fetch: _Fetch, sha256: str) -> None:
    _remove_tree(fetch.cache.tarball(sha256))
    if not fetch.pinned:
        _remove_tree(fetch.cache.record(fetch.url))


def _extract_archive(tarball: Path, into: Path) -> int | None:
    """Extract ``tarball`` into ``into`` safely; the newest mtime among its members (the epoch)."""
    with tarfile.open(tarball, "r:*") as archive:
        archive.extractall(into, filter=_safe_member)
        mtimes = [member.mtime for member in archive.getmembers()]
    return _epoch(max(mtimes)) if mtimes else None


def _safe_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """The ``data`` filter, which refuses members outside ``dest`` (``..``, links pointing out) and
    device files and clears setuid bits, and which also refuses absolute names (it would only
    strip their leading slash: no honest source archive has one)."""
    if member.name.startswith(("/", os.sep)):
        raise tarfile.AbsolutePathError(member)
    return tarfile.data_filter(member, dest)


def _install_tree(partial: Path, tree: Path, epoch: int | None) -> int | None:
    """Rename the extracted ``partial`` to ``tree``; if another run got there first, keep theirs.
    The epoch of the tree in place."""
    try:
        partial.replace(tree)
    except OSError:
        theirs = _Marker.read(tree)
        if theirs is not None:
            return theirs.epoch  # the caller deletes ours
        raise
    return epoch
