"""Finding CUDA toolkits, cuDNN, NCCL and TensorRT from their files, without a GPU or a driver.

Everything is looked up below ``root`` as if it were ``/`` (absolute symlinks resolve inside it,
like a chroot), so tests feed whole recorded trees. Only known paths are checked and a few
directories are listed one level deep; nvcc runs at most once per toolkit. Whatever looks wrong
(unreadable or garbage files, broken symlinks, an nvcc that fails, versions that disagree) becomes
a warning, never an error.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import site
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tfbuild.detect._run import Runner, run_command

__all__ = [
    "SOURCES",
    "CudaReport",
    "CudaToolkit",
    "LibraryInstall",
    "locate_cuda",
    "parse_cuda_version_macro",
    "parse_header_version",
    "parse_nvcc_version",
]

# NVIDIA names its per-architecture trees after the CPU (x86_64, sbsa for arm64 servers, aarch64 for
# Jetson); Debian names its multiarch directories after the GNU triplet. Checking all of them costs
# a few stat calls and keeps fixtures from one architecture valid on another.
_TARGETS = ("x86_64-linux", "sbsa-linux", "aarch64-linux")
_MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu")
_INCLUDE_DIRS = ("include", *(f"targets/{t}/include" for t in _TARGETS))
_LIB_DIRS = (
    "lib64",
    "lib",
    *(f"lib/{m}" for m in _MULTIARCH),
    *(f"targets/{t}/lib" for t in _TARGETS),
)
_SYSTEM_INCLUDE_DIRS = ("/usr/include", *(f"/usr/include/{m}" for m in _MULTIARCH))
_SYSTEM_LIB_DIRS = (*(f"/usr/lib/{m}" for m in _MULTIARCH), "/usr/lib64", "/usr/lib")

#: Version macros sit near the top of every header read here; cuda.h alone is over 1 MB.
_READ_LIMIT = 256 * 1024
#: Linux gives up after 40 symlinks in one lookup; so does the resolver below.
_MAX_LINKS = 40

#: Every ``found_by`` label, in the order reports list them.
SOURCES = (
    "/usr/local/cuda",
    "/usr/local/cuda-*",
    "/opt/cuda",
    "CUDA_HOME",
    "CUDA_PATH",
    "PATH",
    "toolkit",
    "system",
    "pip",
    "conda",
    "LD_LIBRARY_PATH",
)


# -- report --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CudaToolkit:
    """One CUDA toolkit, however many ways lead to it."""

    root: PurePosixPath  # resolved, as seen inside the searched root
    version: str | None  # "12.6": major.minor from the best evidence (cuda.h first)
    evidence: tuple[
        tuple[str, str], ...
    ]  # (source, version) sorted by source, e.g. ("nvcc", "12.6.85")
    nvcc: PurePosixPath | None
    found_by: tuple[str, ...]  # labels from SOURCES
    libraries: tuple[PurePosixPath, ...]  # libcudart files

    def evidence_of(self, source: str) -> str | None:
        """What one source (``cuda.h``, ``nvcc``, ``version.json``, ...) says, if it was read."""
        return dict(self.evidence).get(source)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "version": self.version,
            "evidence": dict(self.evidence),
            "nvcc": str(self.nvcc) if self.nvcc else None,
            "found_by": list(self.found_by),
            "libraries": sorted(str(p) for p in self.libraries),
        }


@dataclass(frozen=True, kw_only=True)
class LibraryInstall:
    """One installed copy of cuDNN, NCCL or TensorRT: its version header and its libraries."""

    name: str  # "cudnn", "nccl" or "tensorrt"
    version: str | None  # "9.3.0": from the header first, else dist-info, conda-meta, the soname
    header: PurePosixPath | None  # the version header, resolved
    libraries: tuple[PurePosixPath, ...]
    evidence: tuple[tuple[str, str], ...]  # ("header" | "library" | "dist-info" | "conda-meta", v)
    found_by: tuple[str, ...]

    def evidence_of(self, source: str) -> str | None:
        return dict(self.evidence).get(source)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "header": str(self.header) if self.header else None,
            "libraries": sorted(str(p) for p in self.libraries),
            "evidence": dict(self.evidence),
            "found_by": list(self.found_by),
        }


@dataclass(frozen=True, kw_only=True)
class CudaReport:
    """Everything CUDA-related found on a machine, plus what looked wrong."""

    toolkits: tuple[CudaToolkit, ...]
    cudnn: tuple[LibraryInstall, ...]
    nccl: tuple[LibraryInstall, ...]
    tensorrt: tuple[LibraryInstall, ...]
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "toolkits": [t.to_json() for t in self.toolkits],
            "cudnn": [i.to_json() for i in self.cudnn],
            "nccl": [i.to_json() for i in self.nccl],
            "tensorrt": [i.to_json() for i in self.tensorrt],
            "warnings": list(self.warnings),
        }


# -- parsing (pure) ------------------------------------------------------------------------------

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\s/]+)", re.MULTILINE)
_NVCC_RELEASE = re.compile(r"release (\d+\.\d+)(?:, V(\d+(?:\.\d+)+))?")
_DIST_INFO = re.compile(r"(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*)\.dist-info")
_CONDA_META = re.compile(r"(?P<name>.+)-(?P<version>\d[^-]*)-(?P<build>[^-]+)\.json")
_VERSION_TXT = re.compile(r"CUDA Version (\d+\.\d+(?:\.\d+)*)")


def _macros(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in _DEFINE.findall(text):
        found.setdefault(name, value)
    return found


def _macro_int(macros: Mapping[str, str], name: str) -> int | None:
    """A macro's integer value, following aliases such as TensorRT 10's TRT_MAJOR_ENTERPRISE."""
    value = macros.get(name)
    for _ in range(8):
        if value is None:
            return None
        value = value.strip("()")
        if value.isdigit():
            return int(value)
        value = macros.get(value)
    return None


def parse_header_version(text: str, names: tuple[str, str, str]) -> str | None:
    """``"9.3.0"`` from a header's MAJOR/MINOR/PATCH macros; None without major and minor."""
    macros = _macros(text)
    major, minor, patch = (_macro_int(macros, n) for n in names)
    if major is None or minor is None:
        return None
    return f"{major}.{minor}" if patch is None else f"{major}.{minor}.{patch}"


def parse_cuda_version_macro(text: str) -> str | None:
    """``"12.5"`` from cuda.h's ``#define CUDA_VERSION 12050`` (TensorFlow's own reading)."""
    value = _macro_int(_macros(text), "CUDA_VERSION")
    if value is None:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def parse_nvcc_version(text: str) -> str | None:
    """``"12.5.82"`` from nvcc's ``release 12.5, V12.5.82`` line (``"12.5"`` without the V part)."""
    match = _NVCC_RELEASE.search(text)
    if not match:
        return None
    return match.group(2) or match.group(1)


def _numbers(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def _agree(a: str, b: str) -> bool:
    """Same major.minor, compared only as far as both say (a soname may carry the major alone)."""
    x, y = _numbers(a)[:2], _numbers(b)[:2]
    n = min(len(x), len(y))
    return x[:n] == y[:n]


def _soname_version(name: str, prefix: str) -> tuple[int, ...]:
    """(9, 5, 0) from ``libcudnn.so.9.5.0``; () from ``libcudnn.so``."""
    return _numbers(name[len(prefix) + 1 :]) if name.startswith(prefix + ".") else ()


def _dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(str(n) for n in numbers)


def _order(labels: Iterable[str]) -> tuple[str, ...]:
    unique = set(labels)
    return tuple(s for s in SOURCES if s in unique) + tuple(sorted(unique - set(SOURCES)))


# -- the tree ------------------------------------------------------------------------------------


class _Tree:
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
        while True:
            if not todo:
                result = done
                break
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


class _Search:
    """One run of the locator: the tree, the runner and the warnings gathered so far."""

    def __init__(self, tree: _Tree, run: Runner) -> None:
        self.tree = tree
        self.run = run
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
        files: list[PurePosixPath] = []
        for directory in dirs:
            for name in self.tree.names(directory):
                if name == prefix or name.startswith(prefix + "."):
                    path = directory / name
                    if self.file(path):
                        files.append(path)
        return files

    def soname(self, path: PurePosixPath, prefix: str) -> tuple[int, ...]:
        """The version a library file carries in its name, or in the name it links to."""
        numbers = _soname_version(path.name, prefix)
        if not numbers:
            real = self.tree.real(path)
            if real is not None:
                numbers = _soname_version(real.name, prefix)
        return numbers

    def dist_infos(self, dirs: Iterable[PurePosixPath]) -> list[tuple[str, str]]:
        """(distribution name, version) of every ``*.dist-info`` directory directly in ``dirs``."""
        found: list[tuple[str, str]] = []
        for directory in dirs:
            for name in self.tree.names(directory):
                match = _DIST_INFO.fullmatch(name)
                if match:
                    found.append((match["name"], match["version"]))
        return found

    def conda_packages(self, prefix: PurePosixPath | None) -> list[tuple[str, str]]:
        """(package, version) from the names of ``conda-meta/*.json`` in a conda prefix."""
        if prefix is None:
            return []
        found: list[tuple[str, str]] = []
        for name in self.tree.names(prefix / "conda-meta"):
            match = _CONDA_META.fullmatch(name)
            if match:
                found.append((match["name"], match["version"]))
        return found


def _newest(candidates: Sequence[str]) -> str | None:
    return max(candidates, key=_numbers) if candidates else None


# -- toolkits ------------------------------------------------------------------------------------


@dataclass
class _Lead:
    """One way to a toolkit root, before the root is looked at."""

    given: PurePosixPath  # the path as the source named it, for messages
    labels: list[str] = field(default_factory=list)
    nvcc: PurePosixPath | None = None  # pip's CUDA 12 wheels keep nvcc outside the runtime's dir
    dist_info_dirs: list[PurePosixPath] = field(default_factory=list)
    conda_prefix: PurePosixPath | None = None
    quiet: bool = True  # say nothing when the place turns out to hold no toolkit


def _has_toolkit_files(search: _Search, root: PurePosixPath) -> bool:
    """cuda.h, version.json/txt or libcudart under ``root``: nvcc alone does not make a toolkit."""
    tree = search.tree
    if tree.is_file(root / "version.json") or tree.is_file(root / "version.txt"):
        return True
    if any(tree.is_file(d / "cuda.h") for d in search.subdirs(root, _INCLUDE_DIRS)):
        return True
    return any(
        n.startswith("libcudart.so") for d in search.subdirs(root, _LIB_DIRS) for n in tree.names(d)
    )


_WRAPPER_TARGET = re.compile(r"(/[^\s\"'`$;|&<>]+)/bin/nvcc\b")


def _wrapper_root(search: _Search, nvcc: PurePosixPath) -> PurePosixPath | None:
    """The toolkit a small ``exec /usr/local/cuda-X/bin/nvcc "$@"`` wrapper script hands over to."""
    st = search.tree.stat(nvcc)
    if st is None or st.st_size > 4096:
        return None
    try:
        text = search.tree.read(nvcc)
    except OSError:
        return None
    if not text.startswith("#!"):
        return None
    for match in _WRAPPER_TARGET.finditer(text):
        root = search.tree.real(PurePosixPath(match.group(1)))
        if root is not None and _has_toolkit_files(search, root):
            return root
    return None


class _Leads:
    """The ways to toolkit roots, gathered by resolved root."""

    def __init__(self, search: _Search) -> None:
        self.search = search
        self.by_root: dict[PurePosixPath, _Lead] = {}

    def add(
        self,
        path: PurePosixPath,
        label: str,
        *,
        quiet: bool = False,
        nvcc: PurePosixPath | None = None,
        dist_info_dir: PurePosixPath | None = None,
        conda_prefix: PurePosixPath | None = None,
    ) -> None:
        if not self.search.present(path):
            return
        real = self.search.tree.real(path)
        if real is None:
            return
        lead = self.by_root.setdefault(real, _Lead(given=path, quiet=quiet))
        lead.quiet = lead.quiet and quiet
        lead.labels.append(label)
        lead.nvcc = lead.nvcc or nvcc
        lead.conda_prefix = lead.conda_prefix or conda_prefix
        if dist_info_dir is not None:
            lead.dist_info_dirs.append(dist_info_dir)

    def well_known(self, env: Mapping[str, str]) -> None:
        """/usr/local/cuda, /usr/local/cuda-*, /opt/cuda, CUDA_HOME and CUDA_PATH."""
        tree, local = self.search.tree, PurePosixPath("/usr/local")
        self.add(local / "cuda", "/usr/local/cuda")
        for name in tree.names(local):
            if name.startswith("cuda-"):
                self.add(local / name, "/usr/local/cuda-*")
        self.add(PurePosixPath("/opt/cuda"), "/opt/cuda")
        for variable in ("CUDA_HOME", "CUDA_PATH"):
            value = env.get(variable, "")
            if not value:
                continue
            path = PurePosixPath(value)
            if not path.is_absolute():
                self.search.warn(f"{variable} is set to {value}, which is not an absolute path.")
                continue
            missing = tree.stat(path) is None and tree.link_target(path) is None
            if missing and tree.real(path) is not None:
                self.search.warn(f"{variable} is set to {value}, which does not exist.")
                continue
            self.add(path, variable)

    def on_path(self, env: Mapping[str, str]) -> None:
        """The toolkit of every distinct nvcc on PATH, seeing through wrapper scripts."""
        search, tree = self.search, self.search.tree
        seen: set[PurePosixPath] = set()
        for entry in env.get("PATH", "").split(os.pathsep):
            if not entry.startswith("/"):
                continue  # relative PATH entries depend on the caller's directory
            nvcc = PurePosixPath(entry) / "nvcc"
            if not search.present(nvcc):
                continue
            real = tree.real(nvcc)
            if real is None or real in seen:
                continue
            seen.add(real)
            root = real.parent.parent
            runtime = root.parent / "cuda_runtime"
            if root.name == "cuda_nvcc" and tree.is_dir(runtime):
                self.add(runtime, "PATH", nvcc=real)  # pip's CUDA 12 wheels, split per component
                continue
            if not _has_toolkit_files(search, root):
                root = _wrapper_root(search, real) or root
            if _has_toolkit_files(search, root):
                self.add(root, "PATH")
            else:
                search.warn(
                    f"nvcc on PATH at {nvcc} is not inside a CUDA toolkit (no cuda.h, "
                    "version.json or libcudart beside it), so it was not used."
                )

    def pip_and_conda(self, env: Mapping[str, str], site_dirs: Sequence[PurePosixPath]) -> None:
        """Toolkits that pip's nvidia-* wheels or a conda environment installed."""
        for sp in site_dirs:
            nvidia = sp / "nvidia"
            for name in self.search.tree.names(nvidia):
                # CUDA 13 wheels share one tree per major: nvidia/cu13/{bin,include,lib}.
                if re.fullmatch(r"cu\d+", name):
                    self.add(nvidia / name, "pip", quiet=True, dist_info_dir=sp)
            # CUDA 12 (and 11) wheels use one directory per component.
            runtime, compiler = nvidia / "cuda_runtime", nvidia / "cuda_nvcc"
            if self.search.tree.is_dir(runtime):
                nvcc = compiler / "bin" / "nvcc"
                self.add(runtime, "pip", quiet=True, nvcc=nvcc, dist_info_dir=sp)
            elif self.search.tree.is_dir(compiler):
                self.add(compiler, "pip", quiet=True, dist_info_dir=sp)
        conda = env.get("CONDA_PREFIX", "")
        if conda.startswith("/"):
            prefix = PurePosixPath(conda)
            self.add(prefix, "conda", quiet=True, conda_prefix=prefix)


def _runtime_wheel(
    search: _Search, root: PurePosixPath, dirs: Sequence[PurePosixPath]
) -> str | None:
    """The version of the nvidia-cuda-runtime wheel that installed ``root``, if one did."""
    per_major = re.fullmatch(r"cu(\d+)", root.name)
    versions = []
    for name, version in search.dist_infos(dirs):
        suffixed = re.fullmatch(r"nvidia_cuda_runtime_cu\d+", name) is not None
        if name != "nvidia_cuda_runtime" and not suffixed:
            continue
        if per_major:
            # nvidia/cu13 comes from the unsuffixed 13.x wheel, not from a _cu12 wheel beside it.
            if suffixed or _numbers(version)[:1] != (int(per_major.group(1)),):
                continue
        elif root.name in ("cuda_runtime", "cuda_nvcc") and not suffixed:
            continue  # the per-component layout belongs to the _cu11/_cu12 wheels
        versions.append(version)
    return _newest(versions)


def _run_nvcc(search: _Search, nvcc: PurePosixPath) -> str | None:
    result = search.run([str(search.tree.host(nvcc)), "--version"])
    if result is None:
        search.warn(f"nvcc at {nvcc} could not be run (not executable, or it timed out).")
        return None
    if result.returncode != 0:
        detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
        why = f" ({detail[0][:200]})" if detail else ""
        search.warn(f"nvcc at {nvcc} exited with status {result.returncode}{why}.")
        return None
    version = parse_nvcc_version(result.stdout)
    if version is None:
        search.warn(f"nvcc at {nvcc} printed no 'release X.Y' line in its --version output.")
    return version


def _version_files(search: _Search, root: PurePosixPath) -> tuple[dict[str, str], bool]:
    """What version.json, version.txt and cuda.h say, and whether any of them is there."""
    evidence: dict[str, str] = {}
    found_any = False
    version_json = root / "version.json"
    if search.file(version_json):
        found_any = True
        text = search.text(version_json)
        if text is not None:
            try:
                value = json.loads(text)["cuda"]["version"]
                if not isinstance(value, str):
                    raise TypeError("not a string")
                evidence["version.json"] = value
            except (ValueError, KeyError, TypeError) as exc:
                search.warn(f"Could not read the CUDA version from {version_json}: {exc}.")
    version_txt = root / "version.txt"
    if search.file(version_txt):
        found_any = True
        text = search.text(version_txt)
        match = _VERSION_TXT.search(text or "")
        if match:
            evidence["version.txt"] = match.group(1)
        elif text is not None:
            search.warn(f"{version_txt} has no 'CUDA Version X.Y' line.")
    for include in search.subdirs(root, _INCLUDE_DIRS):
        header = include / "cuda.h"
        if search.file(header):
            found_any = True
            text = search.text(header)
            version = parse_cuda_version_macro(text) if text is not None else None
            if version is not None:
                evidence["cuda.h"] = version
            elif text is not None:
                search.warn(f"{header} has no '#define CUDA_VERSION' line.")
            break
    return evidence, found_any


def _inspect_toolkit(search: _Search, root: PurePosixPath, lead: _Lead) -> CudaToolkit | None:
    evidence, found_any = _version_files(search, root)
    libraries = search.library_files(search.subdirs(root, _LIB_DIRS), "libcudart.so")
    sonames = [search.soname(p, "libcudart.so") for p in libraries]
    if any(sonames):
        evidence["libcudart"] = _dotted(max(sonames, key=len))
    nvcc = lead.nvcc or root / "bin" / "nvcc"
    has_nvcc = search.file(nvcc)
    if not (found_any or libraries or has_nvcc):
        if not lead.quiet:
            search.warn(
                f"{lead.given} does not look like a CUDA toolkit "
                "(no nvcc, cuda.h, version.json or libcudart in it)."
            )
        return None
    if has_nvcc:
        version = _run_nvcc(search, nvcc)
        if version is not None:
            evidence["nvcc"] = version
    wheel = _runtime_wheel(search, root, [*lead.dist_info_dirs, root / "dist-info"])
    if wheel is not None:
        evidence["dist-info"] = wheel
    conda = [
        v
        for n, v in search.conda_packages(lead.conda_prefix)
        if n in ("cuda-cudart", "cudatoolkit")
    ]
    if conda:
        evidence["conda-meta"] = _newest(conda) or conda[0]

    # cuda.h first, as TensorFlow's own configure reads it; a soname carries the major alone.
    priority = ("cuda.h", "version.json", "nvcc", "version.txt", "dist-info", "conda-meta")
    best = next((evidence[s] for s in (*priority, "libcudart") if s in evidence), None)
    version = _dotted(_numbers(best)[:2]) if best else None
    if version is None:
        search.warn(f"No version could be read for the CUDA toolkit at {root}.")
    _warn_disagreement(search, f"The CUDA toolkit at {root}", evidence)
    return CudaToolkit(
        root=root,
        version=version,
        evidence=tuple(sorted(evidence.items())),
        nvcc=nvcc if has_nvcc else None,
        found_by=_order(lead.labels),
        libraries=tuple(sorted(libraries)),
    )


def _warn_disagreement(search: _Search, what: str, evidence: Mapping[str, str]) -> None:
    values = list(evidence.values())
    if any(not _agree(a, b) for a in values for b in values):
        listed = ", ".join(f"{source} {version}" for source, version in sorted(evidence.items()))
        search.warn(f"{what} reports different versions: {listed}.")


# -- cuDNN, NCCL, TensorRT -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    name: str
    title: str
    headers: tuple[str, ...]  # name patterns, most authoritative first
    header_label: str  # the header's name in messages
    fallback: tuple[str, ...]  # read only when no header above is in the same place
    macros: tuple[str, str, str]
    library: str
    pip_include: str | None
    pip_lib: str
    dist_info: str  # regex on the distribution name
    conda: str | None


_SPECS = (
    _Spec(
        name="cudnn",
        title="cuDNN",
        # cuDNN 8+ keeps its version in cudnn_version.h; Debian's packages name it
        # cudnn_version_v9.h under the multiarch directory. cudnn.h carries it only before cuDNN 8.
        headers=("cudnn_version.h", "cudnn_version_v[0-9]*.h"),
        header_label="cudnn_version.h or cudnn.h",
        fallback=("cudnn.h",),
        macros=("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
        library="libcudnn.so",
        pip_include="nvidia/cudnn/include",
        pip_lib="nvidia/cudnn/lib",
        dist_info=r"nvidia_cudnn(_cu\d+)?",
        conda="cudnn",
    ),
    _Spec(
        name="nccl",
        title="NCCL",
        headers=("nccl.h",),
        header_label="nccl.h",
        fallback=(),
        macros=("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"),
        library="libnccl.so",
        pip_include="nvidia/nccl/include",
        pip_lib="nvidia/nccl/lib",
        dist_info=r"nvidia_nccl(_cu\d+)?",
        conda="nccl",
    ),
    _Spec(
        name="tensorrt",
        title="TensorRT",
        headers=("NvInferVersion.h",),
        header_label="NvInferVersion.h",
        fallback=(),
        macros=("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH"),
        library="libnvinfer.so",
        pip_include=None,  # the tensorrt-cu12-libs wheel ships libraries only
        pip_lib="tensorrt_libs",
        dist_info=r"tensorrt(_cu\d+)?_libs",
        conda=None,
    ),
)


@dataclass(frozen=True)
class _Place:
    """Where to look for one library: include and lib directories, plus package metadata."""

    label: str
    include_dirs: tuple[PurePosixPath, ...]
    lib_dirs: tuple[PurePosixPath, ...]
    dist_info_dirs: tuple[PurePosixPath, ...] = ()
    conda_prefix: PurePosixPath | None = None


@dataclass
class _Found:
    header: PurePosixPath | None
    header_version: str | None
    libraries: list[PurePosixPath]
    lib_reals: set[PurePosixPath]
    evidence: dict[str, str]
    labels: list[str]


def _places(
    search: _Search,
    spec: _Spec,
    toolkits: Sequence[CudaToolkit],
    env: Mapping[str, str],
    site_dirs: Sequence[PurePosixPath],
) -> list[_Place]:
    def dirs(base: PurePosixPath, relative: Iterable[str]) -> tuple[PurePosixPath, ...]:
        return tuple(search.subdirs(base, relative))

    root = PurePosixPath("/")
    places = [
        _Place("toolkit", dirs(t.root, _INCLUDE_DIRS), dirs(t.root, _LIB_DIRS)) for t in toolkits
    ]
    places.append(_Place("system", dirs(root, _SYSTEM_INCLUDE_DIRS), dirs(root, _SYSTEM_LIB_DIRS)))
    for sp in site_dirs:
        include = dirs(sp, [spec.pip_include]) if spec.pip_include else ()
        places.append(_Place("pip", include, dirs(sp, [spec.pip_lib]), dist_info_dirs=(sp,)))
        for name in search.tree.names(sp / "nvidia"):
            if re.fullmatch(r"cu\d+", name):
                tree_dir = sp / "nvidia" / name
                places.append(
                    _Place("pip", dirs(tree_dir, ["include"]), dirs(tree_dir, ["lib"]), (sp,))
                )
    conda = env.get("CONDA_PREFIX", "")
    if conda.startswith("/"):
        prefix = PurePosixPath(conda)
        places.append(
            _Place(
                "conda",
                dirs(prefix, _INCLUDE_DIRS),
                dirs(prefix, _LIB_DIRS),
                conda_prefix=prefix,
            )
        )
    for entry in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if entry.startswith("/"):
            lib = PurePosixPath(entry)
            places.append(
                _Place("LD_LIBRARY_PATH", dirs(lib.parent, ["include"]), dirs(lib, ["."]))
            )
    return places


def _headers(search: _Search, spec: _Spec, place: _Place) -> list[tuple[PurePosixPath, str | None]]:
    """(resolved header, version) for each distinct version header in a place."""
    found: list[tuple[PurePosixPath, str | None]] = []
    seen: set[PurePosixPath] = set()
    for patterns in (spec.headers, spec.fallback):
        if found:
            break  # cudnn.h is only a fallback for cuDNN 7 and older
        for include in place.include_dirs:
            for pattern in patterns:
                for name in search.tree.names(include):
                    if not fnmatch.fnmatchcase(name, pattern):
                        continue
                    path = include / name
                    real = search.tree.real(path)
                    if real is None or real in seen or not search.file(path):
                        continue
                    seen.add(real)
                    text = search.text(path)
                    if text is None:
                        continue
                    version = parse_header_version(text, spec.macros)
                    if version is None:
                        wanted = " and ".join(spec.macros[:2])
                        search.warn(f"{path} has no {wanted} macros, so its version is unknown.")
                    found.append((real, version))
    return found


def _find_in_place(search: _Search, spec: _Spec, place: _Place) -> list[_Found]:
    headers = _headers(search, spec, place)
    libraries = search.library_files(place.lib_dirs, spec.library)
    if not headers and not libraries:
        return []

    by_major: dict[int | None, list[PurePosixPath]] = {}
    for lib in libraries:
        numbers = search.soname(lib, spec.library)
        by_major.setdefault(numbers[0] if numbers else None, []).append(lib)

    # Pair each header with the libraries of its major version. Whatever is left over either
    # belongs to the one header of this place (and disagrees with it), or has no header at all.
    groups: list[tuple[PurePosixPath | None, str | None, list[PurePosixPath]]] = []
    for header, version in headers:
        major = _numbers(version)[0] if version else None
        groups.append((header, version, by_major.pop(major, []) if major is not None else []))
    leftover = [lib for libs in by_major.values() for lib in libs]
    if leftover and len(groups) == 1 and not groups[0][2]:
        groups[0] = (groups[0][0], groups[0][1], leftover)
    elif leftover:
        for major in sorted(by_major, key=lambda m: -1 if m is None else m):
            groups.append((None, None, by_major[major]))

    wheels = [
        v for n, v in search.dist_infos(place.dist_info_dirs) if re.fullmatch(spec.dist_info, n)
    ]
    conda = [v for n, v in search.conda_packages(place.conda_prefix) if n == spec.conda]
    results = []
    for group_header, group_version, libs in groups:
        evidence: dict[str, str] = {}
        if group_version:
            evidence["header"] = group_version
        sonames = [search.soname(lib, spec.library) for lib in libs]
        if any(sonames):
            evidence["library"] = _dotted(max(sonames, key=len))
        if wheels:
            evidence["dist-info"] = _newest(wheels) or wheels[0]
        if conda:
            evidence["conda-meta"] = _newest(conda) or conda[0]
        reals = {r for r in (search.tree.real(lib) for lib in libs) if r is not None}
        results.append(
            _Found(group_header, group_version, sorted(libs), reals, evidence, [place.label])
        )
    return results


def _same_install(a: _Found, b: _Found) -> bool:
    if a.header is not None and a.header == b.header:
        return True
    headers_fit = a.header is None or b.header is None or a.header == b.header
    return headers_fit and bool(a.lib_reals & b.lib_reals)


def _merge(found: Iterable[_Found]) -> list[_Found]:
    merged: list[_Found] = []
    for item in found:
        for other in merged:
            if _same_install(item, other):
                other.header = other.header or item.header
                other.header_version = other.header_version or item.header_version
                other.libraries = sorted(set(other.libraries) | set(item.libraries))
                other.lib_reals |= item.lib_reals
                other.evidence = {**item.evidence, **other.evidence}
                other.labels.extend(item.labels)
                break
        else:
            merged.append(item)
    return merged


def _install(search: _Search, spec: _Spec, item: _Found) -> LibraryInstall:
    title, evidence = spec.title, item.evidence
    first_lib = item.libraries[0] if item.libraries else None
    if item.header is None and first_lib is not None:
        search.warn(
            f"{title} library {first_lib} was found without its header "
            f"({spec.header_label}); building against it needs one."
        )
    if item.header is not None and first_lib is None:
        search.warn(
            f"{title} header {item.header} (version {item.header_version or 'unknown'}) "
            f"was found without a {spec.library} library."
        )
    compared = dict(evidence)
    if item.header_version and first_lib is not None:
        header_major = _numbers(item.header_version)[:1]
        for lib in item.libraries:
            numbers = search.soname(lib, spec.library)
            if numbers and numbers[:1] != header_major:
                search.warn(
                    f"{title} header {item.header} says {item.header_version} but library {lib} "
                    f"is version {_dotted(numbers)}."
                )
                compared.pop("library", None)  # said once, above
                break
    _warn_disagreement(search, f"{title} at {item.header or first_lib}", compared)

    best = next(
        (evidence[s] for s in ("header", "dist-info", "conda-meta", "library") if s in evidence),
        None,
    )
    return LibraryInstall(
        name=spec.name,
        version=best,
        header=item.header,
        libraries=tuple(item.libraries),
        evidence=tuple(sorted(evidence.items())),
        found_by=_order(item.labels),
    )


def _locate_library(
    search: _Search,
    spec: _Spec,
    toolkits: Sequence[CudaToolkit],
    env: Mapping[str, str],
    site_dirs: Sequence[PurePosixPath],
) -> tuple[LibraryInstall, ...]:
    found = [
        item
        for place in _places(search, spec, toolkits, env, site_dirs)
        for item in _find_in_place(search, spec, place)
    ]
    installs = [_install(search, spec, item) for item in _merge(found)]
    return tuple(sorted(installs, key=lambda i: str(i.header or i.libraries[0])))


# -- entry point ---------------------------------------------------------------------------------


def _default_site_packages() -> tuple[PurePosixPath, ...]:
    """This interpreter's site-packages, and the user's when Python would import from it."""
    dirs: list[str] = []
    # Some embedded interpreters and old virtualenvs ship a site module without these.
    with contextlib.suppress(AttributeError):
        dirs.extend(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        with contextlib.suppress(AttributeError):
            dirs.append(site.getusersitepackages())
    return tuple(PurePosixPath(d) for d in dict.fromkeys(dirs) if d.startswith("/"))


def locate_cuda(
    *,
    root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    site_packages: Sequence[PurePosixPath | str] | None = None,
    run: Runner = run_command,
) -> CudaReport:
    """Every CUDA toolkit, cuDNN, NCCL and TensorRT installed below ``root``.

    ``env`` (default: ``os.environ``) supplies CUDA_HOME, CUDA_PATH, PATH, CONDA_PREFIX and
    LD_LIBRARY_PATH; ``site_packages`` (default: this interpreter's) is where pip's ``nvidia-*``
    wheels would be. All paths, including those in ``env``, are read as seen from ``root``.
    """
    env = os.environ if env is None else env
    sites = _default_site_packages() if site_packages is None else site_packages
    site_dirs = [PurePosixPath(s) for s in sites if str(s).startswith("/")]
    search = _Search(_Tree(root), run)

    leads = _Leads(search)
    leads.well_known(env)
    leads.on_path(env)
    leads.pip_and_conda(env, site_dirs)
    toolkits = []
    for real_root, lead in leads.by_root.items():
        toolkit = _inspect_toolkit(search, real_root, lead)
        if toolkit is not None:
            toolkits.append(toolkit)
    toolkits.sort(key=lambda t: str(t.root))

    cudnn, nccl, tensorrt = (
        _locate_library(search, spec, toolkits, env, site_dirs) for spec in _SPECS
    )
    for loop in sorted(search.tree.loops):
        search.warn(f"{loop} is part of a symlink loop; it was skipped.")
    return CudaReport(
        toolkits=tuple(toolkits),
        cudnn=cudnn,
        nccl=nccl,
        tensorrt=tensorrt,
        warnings=tuple(sorted(set(search.warnings))),
    )
