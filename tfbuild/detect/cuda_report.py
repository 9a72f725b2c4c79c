"""What the CUDA locator reports: toolkits, cuDNN/NCCL/TensorRT installs, and how each was found."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

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
