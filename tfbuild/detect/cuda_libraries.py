"""Finding cuDNN, NCCL and TensorRT installs: headers and libraries paired by version, per place."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from tfbuild.detect.cuda_report import CudaToolkit, LibraryInstall, in_source_order
from tfbuild.detect.cuda_search import (
    INCLUDE_DIRS,
    LIB_DIRS,
    SYSTEM_INCLUDE_DIRS,
    SYSTEM_LIB_DIRS,
    Search,
    warn_disagreement,
)
from tfbuild.detect.cuda_versions import dotted, newest, parse_header_version, version_numbers
from tfbuild.detect.values import Evidence


@dataclass(frozen=True)
class _Spec:
    name: str
    title: str
    headers: tuple[str, ...]  # name patterns, most authoritative first
    macros: tuple[str, str, str]
    library: str
    pip_include: str | None
    pip_lib: str
    dist_info: str  # regex on the distribution name
    conda: str | None = None
    fallback: tuple[str, ...] = ()  # read only when no header above is in the same place


_SPECS = (
    _Spec(
        name="cudnn",
        title="cuDNN",
        # cuDNN 8+ keeps its version in cudnn_version.h; Debian's packages name it
        # cudnn_version_v9.h under the multiarch directory. cudnn.h carries it only before cuDNN 8.
        headers=("cudnn_version.h", "cudnn_version_v[0-9]*.h"),
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
        macros=("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH"),
        library="libnvinfer.so",
        pip_include=None,  # the tensorrt-cu12-libs wheel ships libraries only
        pip_lib="tensorrt_libs",
        dist_info=r"tensorrt(_cu\d+)?_libs",
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
    search: Search,
    spec: _Spec,
    toolkits: Sequence[CudaToolkit],
    env: Mapping[str, str],
    site_dirs: Sequence[PurePosixPath],
) -> list[_Place]:
    def dirs(base: PurePosixPath, relative: Iterable[str]) -> tuple[PurePosixPath, ...]:
        return tuple(search.subdirs(base, relative))

    root = PurePosixPath("/")
    places = [
        _Place("toolkit", dirs(t.root, INCLUDE_DIRS), dirs(t.root, LIB_DIRS)) for t in toolkits
    ]
    places.append(_Place("system", dirs(root, SYSTEM_INCLUDE_DIRS), dirs(root, SYSTEM_LIB_DIRS)))
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
        conda_dirs = dirs(prefix, INCLUDE_DIRS), dirs(prefix, LIB_DIRS)
        places.append(_Place("conda", *conda_dirs, conda_prefix=prefix))
    for entry in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if entry.startswith("/"):
            lib = PurePosixPath(entry)
            places.append(
                _Place("LD_LIBRARY_PATH", dirs(lib.parent, ["include"]), dirs(lib, ["."]))
            )
    return places


def _headers(search: Search, spec: _Spec, place: _Place) -> list[tuple[PurePosixPath, str | None]]:
    """(resolved header, version) for each distinct version header in a place."""
    found: list[tuple[PurePosixPath, str | None]] = []
    seen: set[PurePosixPath] = set()
    for patterns in (spec.headers, spec.fallback):
        if found:
            break  # cudnn.h is only a fallback for cuDNN 7 and older
        paths = [
            include / name
            for include in place.include_dirs
            for pattern in patterns
            for name in search.tree.names(include)
            if fnmatch.fnmatchcase(name, pattern)
        ]
        for path in paths:
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


def _find_in_place(search: Search, spec: _Spec, place: _Place) -> list[_Found]:
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
        major = version_numbers(version)[0] if version else None
        groups.append((header, version, by_major.pop(major, []) if major is not None else []))
    leftover = [lib for libs in by_major.values() for lib in libs]
    if leftover and len(groups) == 1 and not groups[0][2]:
        groups[0] = (groups[0][0], groups[0][1], leftover)
    elif leftover:
        for major in sorted(by_major, key=lambda m: -1 if m is None else m):
            groups.append((None, None, by_major[major]))

    wheels = search.dist_infos(place.dist_info_dirs)
    wheel = newest([v for n, v in wheels if re.fullmatch(spec.dist_info, n)])
    conda = newest([v for n, v in search.conda_packages(place.conda_prefix) if n == spec.conda])
    results = []
    for group_header, group_version, libs in groups:
        sonames = [search.soname(lib, spec.library) for lib in libs]
        library = dotted(max(sonames, key=len)) if any(sonames) else None
        said = {
            "header": group_version,
            "library": library,
            "dist-info": wheel,
            "conda-meta": conda,
        }
        evidence = {source: version for source, version in said.items() if version}
        reals = {r for r in (search.tree.real(lib) for lib in libs) if r is not None}
        results.append(
            _Found(group_header, group_version, sorted(libs), reals, evidence, [place.label])
        )
    return results


def _same_install(a: _Found, b: _Found) -> bool:
    if a.header is not None and a.header == b.header:
        return True
    return (a.header is None or b.header is None) and bool(a.lib_reals & b.lib_reals)


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


def _install(search: Search, spec: _Spec, item: _Found) -> LibraryInstall:
    title, evidence = spec.title, item.evidence
    first_lib = item.libraries[0] if item.libraries else None
    if item.header is None and first_lib is not None:
        search.warn(
            f"{title} library {first_lib} was found without its header "
            f"({' or '.join((spec.headers[0], *spec.fallback))}); building against it needs one."
        )
    if item.header is not None and first_lib is None:
        search.warn(
            f"{title} header {item.header} (version {item.header_version or 'unknown'}) "
            f"was found without a {spec.library} library."
        )
    compared = dict(evidence)
    if item.header_version and first_lib is not None:
        header_major = version_numbers(item.header_version)[:1]
        for lib in item.libraries:
            numbers = search.soname(lib, spec.library)
            if numbers and numbers[:1] != header_major:
                search.warn(
                    f"{title} header {item.header} says {item.header_version} but library {lib} "
                    f"is version {dotted(numbers)}."
                )
                compared.pop("library", None)  # said once, above
                break
    warn_disagreement(search, f"{title} at {item.header or first_lib}", compared)

    best = next(
        (evidence[s] for s in ("header", "dist-info", "conda-meta", "library") if s in evidence),
        None,
    )
    return LibraryInstall(
        name=spec.name,
        version=best,
        header=item.header,
        libraries=tuple(sorted(item.libraries, key=str)),
        evidence=Evidence(sorted(evidence.items())),
        found_by=in_source_order(item.labels),
    )


def locate_libraries(
    search: Search,
    toolkits: Sequence[CudaToolkit],
    env: Mapping[str, str],
    site_dirs: Sequence[PurePosixPath],
) -> tuple[tuple[LibraryInstall, ...], tuple[LibraryInstall, ...], tuple[LibraryInstall, ...]]:
    """The (cuDNN, NCCL, TensorRT) installs, each sorted by header (or first library)."""
    found = []
    for spec in _SPECS:
        places = _places(search, spec, toolkits, env, site_dirs)
        merged = _merge(item for place in places for item in _find_in_place(search, spec, place))
        installs = [_install(search, spec, item) for item in merged]
        found.append(tuple(sorted(installs, key=lambda i: str(i.header or i.libraries[0]))))
    cudnn, nccl, tensorrt = found
    return cudnn, nccl, tensorrt
