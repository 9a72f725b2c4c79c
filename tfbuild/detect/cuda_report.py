"""What the CUDA locator reports: toolkits, cuDNN/NCCL/TensorRT installs, and how each was found."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from tfbuild.detect.values import Evidence

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


def in_source_order(labels: Iterable[str]) -> tuple[str, ...]:
    """``found_by`` labels without repeats, in the order of :data:`SOURCES` (unknown ones last)."""
    unique = set(labels)
    return tuple(s for s in SOURCES if s in unique) + tuple(sorted(unique - set(SOURCES)))


@dataclass(frozen=True, kw_only=True)
class CudaToolkit:
    """One CUDA toolkit, however many ways lead to it."""

    root: PurePosixPath  # resolved, as seen inside the searched root
    version: str | None  # "12.6": major.minor from the best evidence (cuda.h first)
    evidence: Evidence  # (source, version) sorted by source, e.g. ("nvcc", "12.6.85")
    nvcc: PurePosixPath | None
    found_by: tuple[str, ...]  # labels from SOURCES
    libraries: tuple[PurePosixPath, ...]  # libcudart files, sorted by their text


@dataclass(frozen=True, kw_only=True)
class LibraryInstall:
    """One installed copy of cuDNN, NCCL or TensorRT: its version header and its libraries."""

    name: str  # "cudnn", "nccl" or "tensorrt"
    version: str | None  # "9.3.0": from the header first, else dist-info, conda-meta, the soname
    header: PurePosixPath | None  # the version header, resolved
    libraries: tuple[PurePosixPath, ...]  # sorted by their text
    evidence: Evidence  # ("header" | "library" | "dist-info" | "conda-meta", version)
    found_by: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class CudaReport:
    """Everything CUDA-related found on a machine, plus what looked wrong."""

    toolkits: tuple[CudaToolkit, ...]
    cudnn: tuple[LibraryInstall, ...]
    nccl: tuple[LibraryInstall, ...]
    tensorrt: tuple[LibraryInstall, ...]
    warnings: tuple[str, ...]
