"""Reading CUDA-stack version numbers out of headers, nvcc output and sonames (pure text)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\s/]+)", re.MULTILINE)
_NVCC_RELEASE = re.compile(r"release (\d+\.\d+)(?:, V(\d+(?:\.\d+)+))?")


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


def version_numbers(version: str) -> tuple[int, ...]:
    """(12, 5) from ``"12.5"``: the leading numeric parts of a dotted version."""
    parts: list[int] = []
    for piece in version.split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def versions_agree(a: str, b: str) -> bool:
    """Same major.minor, compared only as far as both say (a soname may carry the major alone)."""
    x, y = version_numbers(a)[:2], version_numbers(b)[:2]
    n = min(len(x), len(y))
    return x[:n] == y[:n]


def soname_version(name: str, prefix: str) -> tuple[int, ...]:
    """(9, 5, 0) from ``libcudnn.so.9.5.0``; () from ``libcudnn.so``."""
    return version_numbers(name[len(prefix) + 1 :]) if name.startswith(prefix + ".") else ()


def dotted(numbers: tuple[int, ...]) -> str:
    """``"9.5.0"`` from (9, 5, 0)."""
    return ".".join(str(n) for n in numbers)


def newest(candidates: Sequence[str]) -> str | None:
    """The highest of some dotted versions; None when there are none."""
    return max(candidates, key=version_numbers) if candidates else None
