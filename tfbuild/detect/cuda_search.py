"""The files below ``root`` as the CUDA locator sees them, and the warnings their state deserves."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from tfbuild.detect.cuda_versions import soname_version, versions_agree

# NVIDIA names its per-architecture trees after the CPU (x86_64, sbsa for arm64 servers, aarch64 for
# Jetson); Debian names its multiarch directories after the GNU triplet. Checking all of them costs
# a few stat calls and keeps fixtures from one architecture valid on another.
_TARGETS = ("x86_64-linux", "sbsa-linux", "aarch64-linux")
_MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu")
INCLUDE_DIRS = ("include", *(f"targets/{t}/include" for t in _TARGETS))
LIB_DIRS = (
    "lib64",
    "lib",
    *(f"lib/{m}" for m in _MULTIARCH),
    *(f"targets/{t}/lib" for t in _TARGETS),
)
SYSTEM_INCLUDE_DIRS = ("/usr/include", *(f"/usr/include/{m}" for m in _MULTIARCH))
SYSTEM_LIB_DIRS = (*(f"/usr/lib/{m}" for m in _MULTIARCH), "/usr/lib64", "/usr/lib")

#: Version macros sit near the top of every header read here; cuda.h alone is over 1 MB.
_READ_LIMIT = 256 * 1024
#: Linux gives up after 40 symlinks in one lookup; so does the resolver below.
_MAX_LINKS = 40

_DIST_INFO = re.compile(r"(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*)\.dist-info")
_CONDA_META = re.compile(r"(?P<name>.+)-(?P<version>\d[^-]*)-(?P<build>[^-]+)\.json")


class Tree:
    """The filesystem as seen from ``root``: absolute symlinks resolve inside it, like a chroot."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loops: set[PurePosixPath] = set()
        self._real: dict[PurePosixPath, PurePosixPath | None] = {}
        self._names: dict[PurePosixPath, tuple[str, ...]] = {}

    def host(self, path: PurePosixPath) -> Path:
        return self.root.joinpath(*path.parts[1:])

    def real(self, path: PurePosixPath) -> PurePosixPath | None:
        """Every symlink in ``path`` resolved (missing parts kept); None for a symlink loop."""
        if path in self._real:
            return self._real[path]
        todo = list(path.parts[1:])
        done = PurePosixPath("/")
        hops = 0
        result: PurePosixPath | None = None
        while todo:
            name = todo.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                done = done.parent  # the parent of / is /, so nothing escapes root
                continue
            step = done / name
            try:
                target = str(self.host(step).readlink())
            except OSError:  # not a symlink, or not there at all
                done = step
                continue
            hops += 1
            if hops > _MAX_LINKS:
                self.loops.add(path)
                break
            link = PurePosixPath(target)
            if link.is_absolute():
                done = PurePosixPath("/")
                todo[:0] = link.parts[1:]
            else:
                todo[:0] = link.parts
        else:
            result = done
        self._real[path] = result
        return result

    def stat(self, path: PurePosixPath) -> os.stat_result | None:
        real = self.real(path)
        if real is None:
            return None
        try:
            return self.host(real).stat()
        except OSError:
            return None

    def is_file(self, path: PurePosixPath) -> bool:
        st = self.stat(path)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, path: PurePosixPath) -> bool:
        st = self.stat(path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def link_target(self, path: PurePosixPath) -> str | None:
        """What ``path`` points to when it is itself a symlink (its parents resolved first)."""
        parent = self.real(path.parent)
        if parent is None:
            return None
        try:
            return str(self.host(parent / path.name).readlink())
        except OSError:
            return None

    def names(self, path: PurePosixPath) -> tuple[str, ...]:
        """The sorted entries of a directory; () when it is absent or unreadable."""
        real = self.real(path)
        if real is None:
            return ()
        if real not in self._names:
            try:
                self._names[real] = tuple(sorted(p.name for p in self.host(real).iterdir()))
            except OSError:
                self._names[real] = ()
        return self._names[real]

    def read(self, path: PurePosixPath) -> str:
        """The start of a regular file as text (undecodable bytes replaced); OSError otherwise."""
        real = self.real(path)
        if real is None:
            raise OSError(f"symlink loop at {path}")
        # Open only regular files: a FIFO or a device would block or never end.
        with self.host(real).open("rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise OSError("not a regular file")
            return handle.read(_READ_LIMIT).decode("utf-8", errors="replace")


class Search:
    """One run of the locator: the tree and the warnings gathered so far."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def present(self, path: PurePosixPath) -> bool:
        """Whether ``path`` exists; a dangling symlink there is reported, plain absence is not."""
        tree = self.tree
        if tree.real(path) is None:
            return False  # a loop, reported once at the end
        if tree.stat(path) is not None:
            return True
        target = tree.link_target(path)
        if target is not None:
            self.warn(f"{path} is a broken symlink to {target}.")
        return False

    def file(self, path: PurePosixPath) -> bool:
        """Whether ``path`` is a regular file worth reading; anything else there is reported."""
        if not self.present(path):
            return False
        if self.tree.is_file(path):
            return True
        if not self.tree.is_dir(path):
            self.warn(f"{path} is not a regular file; it was not read.")
        return False

    def text(self, path: PurePosixPath) -> str | None:
        try:
            return self.tree.read(path)
        except OSError as exc:
            self.warn(f"Could not read {path}: {exc.strerror or exc}.")
            return None

    def subdirs(self, base: PurePosixPath, relative: Iterable[str]) -> list[PurePosixPath]:
        """The existing ``base/rel`` directories, one per real directory, in the order given."""
        found: list[PurePosixPath] = []
        seen: set[PurePosixPath] = set()
        for rel in relative:
            path = base / rel
            if not self.present(path) or not self.tree.is_dir(path):
                continue
            real = self.tree.real(path)
            if real is not None and real not in seen:
                seen.add(real)
                found.append(real)
        return found

    def library_files(self, dirs: Iterable[PurePosixPath], prefix: str) -> list[PurePosixPath]:
        """``prefix`` and ``prefix.*`` files in resolved ``dirs``, skipping dangling links."""
        return [
            directory / name
            for directory in dirs
            for name in self.tree.names(directory)
            if (name == prefix or name.startswith(prefix + ".")) and self.file(directory / name)
        ]

    def soname(self, path: PurePosixPath, prefix: str) -> tuple[int, ...]:
        """The version a library file carries in its name, or in the name it links to."""
        numbers = soname_version(path.name, prefix)
        if not numbers:
            real = self.tree.real(path)
            if real is not None:
                numbers = soname_version(real.name, prefix)
        return numbers

    def dist_infos(self, dirs: Iterable[PurePosixPath]) -> list[tuple[str, str]]:
        """(distribution name, version) of every ``*.dist-info`` directory directly in ``dirs``."""
        return self._named(dirs, _DIST_INFO)

    def conda_packages(self, prefix: PurePosixPath | None) -> list[tuple[str, str]]:
        """(package, version) from the names of ``conda-meta/*.json`` in a conda prefix."""
        return [] if prefix is None else self._named([prefix / "conda-meta"], _CONDA_META)

    def _named(
        self, dirs: Iterable[PurePosixPath], pattern: re.Pattern[str]
    ) -> list[tuple[str, str]]:
        """(name, version) of the entries of ``dirs`` that ``pattern`` matches whole."""
        return [
            (match["name"], match["version"])
            for directory in dirs
            for name in self.tree.names(directory)
            if (match := pattern.fullmatch(name))
        ]


def warn_disagreement(search: Search, what: str, evidence: Mapping[str, str]) -> None:
    """Warn when the sources of one install's version disagree on its major.minor."""
    values = list(evidence.values())
    if any(not versions_agree(a, b) for a in values for b in values):
        listed = ", ".join(f"{source} {version}" for source, version in sorted(evidence.items()))
        search.warn(f"{what} reports different versions: {listed}.")
