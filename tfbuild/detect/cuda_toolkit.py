"""Finding CUDA toolkits: the ways that lead to one, and the version evidence inside each."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from tfbuild.core.commands import Command, attempt
from tfbuild.detect.cuda_report import CudaToolkit, in_source_order
from tfbuild.detect.cuda_search import INCLUDE_DIRS, LIB_DIRS, Search, warn_disagreement
from tfbuild.detect.cuda_versions import (
    dotted,
    newest,
    parse_cuda_version_macro,
    parse_nvcc_version,
    version_numbers,
)
from tfbuild.detect.values import Evidence

_VERSION_TXT = re.compile(r"CUDA Version (\d+\.\d+(?:\.\d+)*)")


@dataclass
class _Lead:
    """One way to a toolkit root, before the root is looked at."""

    given: PurePosixPath  # the path as the source named it, for messages
    labels: list[str] = field(default_factory=list)
    nvcc: PurePosixPath | None = None  # pip's CUDA 12 wheels keep nvcc outside the runtime's dir
    dist_info_dirs: list[PurePosixPath] = field(default_factory=list)
    conda_prefix: PurePosixPath | None = None
    quiet: bool = True  # say nothing when the place turns out to hold no toolkit


def _has_toolkit_files(search: Search, root: PurePosixPath) -> bool:
    """cuda.h, version.json/txt or libcudart under ``root``: nvcc alone does not make a toolkit."""
    tree = search.tree
    if tree.is_file(root / "version.json") or tree.is_file(root / "version.txt"):
        return True
    if any(tree.is_file(d / "cuda.h") for d in search.subdirs(root, INCLUDE_DIRS)):
        return True
    return any(
        n.startswith("libcudart.so") for d in search.subdirs(root, LIB_DIRS) for n in tree.names(d)
    )


_WRAPPER_TARGET = re.compile(r"(/[^\s\"'`$;|&<>]+)/bin/nvcc\b")


def _wrapper_root(search: Search, nvcc: PurePosixPath) -> PurePosixPath | None:
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

    def __init__(self, search: Search) -> None:
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
    search: Search, root: PurePosixPath, dirs: Sequence[PurePosixPath]
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
            if suffixed or version_numbers(version)[:1] != (int(per_major.group(1)),):
                continue
        elif root.name in ("cuda_runtime", "cuda_nvcc") and not suffixed:
            continue  # the per-component layout belongs to the _cu11/_cu12 wheels
        versions.append(version)
    return newest(versions)


def _run_nvcc(search: Search, nvcc: PurePosixPath) -> str | None:
    argv = (str(search.tree.host(nvcc)), "--version")
    env = {**os.environ, "LC_ALL": "C"}  # its "release X.Y" line is read in English
    result = attempt(Command(argv=argv, what="nvcc did not run", env=env, timeout=10.0))
    if result.returncode is None:
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


def _version_files(search: Search, root: PurePosixPath) -> tuple[dict[str, str], bool]:
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
    for include in search.subdirs(root, INCLUDE_DIRS):
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


def _inspect_toolkit(search: Search, root: PurePosixPath, lead: _Lead) -> CudaToolkit | None:
    evidence, found_any = _version_files(search, root)
    libraries = search.library_files(search.subdirs(root, LIB_DIRS), "libcudart.so")
    sonames = [search.soname(p, "libcudart.so") for p in libraries]
    if any(sonames):
        evidence["libcudart"] = dotted(max(sonames, key=len))
    nvcc = lead.nvcc or root / "bin" / "nvcc"
    has_nvcc = search.file(nvcc)
    if not (found_any or libraries or has_nvcc):
        if not lead.quiet:
            search.warn(
                f"{lead.given} does not look like a CUDA toolkit "
                "(no nvcc, cuda.h, version.json or libcudart in it)."
            )
        return None
    packages = search.conda_packages(lead.conda_prefix)
    said = {
        "nvcc": _run_nvcc(search, nvcc) if has_nvcc else None,
        "dist-info": _runtime_wheel(search, root, [*lead.dist_info_dirs, root / "dist-info"]),
        "conda-meta": newest([v for n, v in packages if n in ("cuda-cudart", "cudatoolkit")]),
    }
    evidence.update((source, version) for source, version in said.items() if version)

    # cuda.h first, as TensorFlow's own configure reads it; a soname carries the major alone.
    priority = ("cuda.h", "version.json", "nvcc", "version.txt", "dist-info", "conda-meta")
    best = next((evidence[s] for s in (*priority, "libcudart") if s in evidence), None)
    version = dotted(version_numbers(best)[:2]) if best else None
    if version is None:
        search.warn(f"No version could be read for the CUDA toolkit at {root}.")
    warn_disagreement(search, f"The CUDA toolkit at {root}", evidence)
    return CudaToolkit(
        root=root,
        version=version,
        evidence=Evidence(sorted(evidence.items())),
        nvcc=nvcc if has_nvcc else None,
        found_by=in_source_order(lead.labels),
        libraries=tuple(sorted(libraries, key=str)),
    )


def locate_toolkits(
    search: Search, env: Mapping[str, str], site_dirs: Sequence[PurePosixPath]
) -> list[CudaToolkit]:
    """Every toolkit that a well-known path, PATH, pip or conda leads to, sorted by root."""
    leads = _Leads(search)
    leads.well_known(env)
    leads.on_path(env)
    leads.pip_and_conda(env, site_dirs)
    inspected = (_inspect_toolkit(search, root, lead) for root, lead in leads.by_root.items())
    return sorted((t for t in inspected if t is not None), key=lambda t: str(t.root))
