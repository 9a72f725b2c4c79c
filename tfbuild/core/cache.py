"""What tfbuild keeps on this machine, where, and which of it a running tfbuild uses.

One directory holds it all (:func:`cache_root`: ``$TFBUILD_CACHE_DIR``, else
``$XDG_CACHE_HOME/tfbuild``, else ``~/.cache/tfbuild``), one subdirectory per kind:

- ``smoke-envs/``: the virtual environments smoke, tune, overlay and forecast install wheels into,
  one per wheel (by its sha256) or requirement and Python, each with its :data:`ENV_MARKER`;
- ``forecasts/``: what ``tfbuild forecast`` measured, for smoke to print beside a wheel's gains;
- ``logs/``: the logs of image builds (base images, the overlay's toolchain image);
- ``sources/``: TensorFlow release tarballs, unpacked.

The engine keeps the rest (images and volumes labelled ``org.tfbuild=1``; :mod:`tfbuild.core.engine`).

A process that uses an environment holds a shared lock on its :data:`IN_USE` file until it exits
(:func:`hold`); ``tfbuild cache --prune`` removes one only under the exclusive lock
(:func:`claimed`), so never one a running tfbuild uses, and a tfbuild that starts to use one
meanwhile waits, then finds it gone and makes it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ENVIRONMENTS = "smoke-envs"
FORECASTS = "forecasts"
LOGS = "logs"
SOURCES = "sources"
#: The file a finished environment has: the wheel or requirement it holds, on its first line.
ENV_MARKER = ".tfbuild-ready"
#: The file whose shared lock says a process uses the directory.
IN_USE = ".tfbuild-in-use"


def cache_root(env: Mapping[str, str] = os.environ) -> Path:
    """``$TFBUILD_CACHE_DIR``, else ``$XDG_CACHE_HOME/tfbuild`` (an absolute one: the XDG spec says
    to ignore a relative path), else ``~/.cache/tfbuild``."""
    if env.get("TFBUILD_CACHE_DIR"):
        return Path(env["TFBUILD_CACHE_DIR"])
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "tfbuild"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".cache" / "tfbuild"


#: The directories this process uses, each with the open file its shared lock is on.
_held: dict[str, int] = {}


def hold(directory: Path) -> None:
    """Say that this process uses ``directory`` until it exits (a shared lock on its
    :data:`IN_USE`); once per directory."""
    key = str(directory.resolve())
    if key in _held:
        return
    fd = os.open(directory / IN_USE, os.O_RDONLY | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held[key] = fd


def release_all() -> None:
    """Let go of every directory this process holds (what its exit does; the tests' in-process
    runner calls it after each command)."""
    for fd in _held.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


@contextlib.contextmanager
def claimed(directory: Path) -> Iterator[bool]:
    """The exclusive lock on ``directory``'s :data:`IN_USE` inside the block when no process
    holds it (True), else False at once: remove the directory only when True."""
    try:
        fd = os.open(directory / IN_USE, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def in_use(directory: Path) -> bool:
    """Whether a running process holds ``directory`` (a shared lock on its :data:`IN_USE`)."""
    with claimed(directory) as mine:
        return not mine


# --- what is kept, and what may go ------------------------------------------------------------

#: The kinds ``tfbuild cache`` lists, in its order: files under :func:`cache_root`, then the
#: engine's images and volumes.
KINDS = ("environment", "forecast", "log", "source", "image", "volume")
_DIRECTORIES = {ENVIRONMENTS: "environment", FORECASTS: "forecast", LOGS: "log", SOURCES: "source"}


@dataclass(frozen=True, kw_only=True)
class CacheEntry:
    """One thing tfbuild keeps: its kind, name (a path under the cache, an image's tag or id, a
    volume), size in bytes (None: not known), when it was last used (epoch seconds), whether a
    running tfbuild uses it, and why nothing needs it any more (``orphan``; empty when something
    may). Kind ``other``: a file under the cache tfbuild did not make, never removed."""

    kind: str
    name: str
    size: int | None
    used: float
    in_use: bool = False
    orphan: str = ""
    what: str = ""  # what it holds, in words: the wheel or requirement of an environment


def _size(path: Path) -> int:
    """Bytes ``path`` takes (its files' sizes, links not followed)."""
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(folder) / name).lstat().st_size
    return total


def _environment(path: Path) -> CacheEntry:
    marker = path / ENV_MARKER
    busy = in_use(path) if not path.name.startswith(".") else _staging_busy(path)
    try:
        lines = marker.read_text(encoding="utf-8", errors="replace").splitlines()
        used = marker.stat().st_mtime
    except OSError:
        lines, used = [], path.stat().st_mtime
    held = lines[0] if lines else ""
    orphan = ""
    if not lines:
        orphan = "unfinished: a run stopped while making it"
    elif held.endswith(".whl") and Path(held).is_absolute() and not Path(held).exists():
        orphan = "its wheel is gone"
    else:
        beneath = [line[3:] for line in lines[1:] if line.startswith("on ")]
        if any(not (Path(b) / ENV_MARKER).is_file() for b in beneath):
            orphan = "the stock environment beneath it is gone"
    return CacheEntry(
        kind="environment",
        name=str(path),
        size=_size(path),
        used=used,
        in_use=busy,
        orphan=orphan,
        what=held,
    )


def _staging_busy(path: Path) -> bool:
    """A half-made environment is someone's until its maker holds it no more (it holds its IN_USE
    from the start); one without that file is an older tfbuild's, busy for an hour."""
    if (path / IN_USE).exists():
        return in_use(path)
    return time.time() - path.stat().st_mtime < 3600


def kept_files(root: Path | None = None) -> list[CacheEntry]:
    """Everything under the cache directory, by kind, each directory's entries in name order."""
    root = cache_root() if root is None else root
    found: list[CacheEntry] = []
    if not root.is_dir():
        return found
    for top in sorted(root.iterdir()):
        kind = _DIRECTORIES.get(top.name)
        if kind is None or not top.is_dir() or top.is_symlink():
            with contextlib.suppress(OSError):
                found.append(_entry("other", top))
            continue
        for entry in sorted(top.iterdir()):
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                if kind == "environment" and entry.is_dir():
                    found.append(_environment(entry))
                else:
                    found.append(_entry(kind, entry))
    return found


def _entry(kind: str, path: Path) -> CacheEntry:
    return CacheEntry(kind=kind, name=str(path), size=_size(path), used=path.stat().st_mtime)


def to_remove(
    kept: list[CacheEntry],
    *,
    kinds: tuple[str, ...] = KINDS,
    older_than: float | None = None,
    everything: bool = False,
    now: float | None = None,
) -> list[CacheEntry]:
    """What ``--prune`` removes of ``kept``: of ``kinds``, never what a running tfbuild uses nor
    what tfbuild did not make; everything with ``everything``, else what nothing needs any more
    and, with ``older_than`` (seconds), what was not used for that long."""
    now = time.time() if now is None else now
    return [
        k
        for k in kept
        if k.kind in kinds
        and k.kind != "other"
        and not k.in_use
        and (everything or k.orphan or (older_than is not None and now - k.used > older_than))
    ]


def remove_file(entry: CacheEntry) -> bool:
    """Remove a file or directory of the cache; an environment only under its exclusive lock,
    moved aside first so that no one finds it half-removed. False when a process uses it."""
    path = Path(entry.name)
    if entry.kind != "environment" or path.name.startswith("."):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        return True
    with claimed(path) as ours:
        if not ours:
            return False
        aside = path.with_name(f".removing-{path.name}-{os.getpid()}")
        path.rename(aside)
    shutil.rmtree(aside, ignore_errors=True)
    return True
