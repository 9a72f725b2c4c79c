"""What a wheel was built for, said in its PEP 440 local version label: ``2.21.0+x86_64v4.cu125``.

A label is dot-separated segments: the CPU target (an archspec name; the generic levels written
``x86_64v2``..``x86_64v4``, as the psABI levels are usually spelt), then ``mkl`` for a oneDNN build,
then ``cuXY`` for a CUDA build (``cu125`` = CUDA 12.5). A stock-style CPU build adds nothing after
the target.

PEP 440 normalises a local label (lower case, ``-`` and ``_`` become ``.``), so ``x86_64v4`` and
``x86.64v4`` are the same version to pip. :func:`parse_label` reads either spelling back by comparing
normalised forms against every archspec target, so labels of named microarchitectures with an
underscore (``skylake_avx512``) survive the round trip. Everything here is pure.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tfbuild.core.defaults import STANDIN_WHEEL
from tfbuild.core.variants import Variant

# Matched whole (re.fullmatch: with re.match, '$' also matches before a final newline).
_GENERIC_LEVEL = re.compile(r"x86_64_v(\d)")
_CUDA_SEGMENT = re.compile(r"cu(\d{2,3})")
NATIVE = "native"


def cpu_label(target: str) -> str:
    """``x86_64_v4`` -> ``x86_64v4``; any other archspec name (or ``native``) as it is."""
    found = _GENERIC_LEVEL.fullmatch(target)
    return f"x86_64v{found.group(1)}" if found else target


def local_label(target: str, variant: Variant, cuda: str | None = None) -> str:
    segments = [cpu_label(target)]
    if variant == Variant.mkl:
        segments.append("mkl")
    if variant == Variant.cuda:
        if not cuda:
            raise ValueError("a CUDA label needs the CUDA version")
        major, minor = ([*cuda.split("."), "0"])[:2]  # 12.5.1 -> cu125, 13.0 -> cu130
        segments.append(f"cu{int(major)}{int(minor)}")
    return ".".join(segments)


def labelled_version(version: str, label: str) -> str:
    """``2.21.0`` -> ``2.21.0+label``; a version with a local part keeps it: ``...+selfbuilt.label``."""
    return f"{version}.{label}" if "+" in version else f"{version}+{label}"


def spelt_version(filename: str) -> str:
    """A wheel file name's version as spelt there (packaging would normalise x86_64v4 to x86.64v4)."""
    return filename.split("-")[1] if filename.count("-") >= 4 else ""


def spelt_label(filename: str) -> str | None:
    """A wheel file name's local label as spelt there, or None: ``...-2.21.0+x86_64v4-...`` -> ``x86_64v4``."""
    return spelt_version(filename).partition("+")[2] or None


def normalised(text: str) -> str:
    """PEP 440's normal form of a local label: lower case, ``.`` between segments."""
    return re.sub(r"[-_.]+", ".", text.strip().lower())


@functools.cache
def _targets_by_label() -> dict[str, str]:
    from tfbuild.core.targets import targets

    labels = {normalised(cpu_label(name)): name for name in targets()}
    labels[NATIVE] = NATIVE
    return labels


@dataclass(frozen=True, kw_only=True)
class WheelLabel:
    """A local version label read back: which CPU target, variant and CUDA a wheel is for."""

    text: str  # the local label as found (without "+")
    target: str | None  # an archspec target name, "native", or None when no segment names one
    variant: Variant
    cuda: str | None  # "12.5" for cu125
    other: tuple[str, ...] = ()  # segments that are none of those (e.g. "selfbuilt")


def parse_label(local: str | None) -> WheelLabel:
    """Read a local version label (``x86_64v4.cu125``, ``selfbuilt.zen4``, or None for none)."""
    text = local or ""
    segments = [s for s in normalised(text).split(".") if s]
    cuda: str | None = None
    variant = Variant.cpu
    rest: list[str] = []
    for segment in segments:
        match = _CUDA_SEGMENT.fullmatch(segment)
        if match:
            digits = match.group(1)
            cuda = f"{int(digits[:-1])}.{digits[-1]}"
            variant = Variant.cuda
        elif segment == "mkl" and variant != "cuda":
            variant = Variant.mkl
        else:
            rest.append(segment)
    by_label = _targets_by_label()
    # The longest run of consecutive segments that names a target wins (skylake.avx512 over skylake).
    for size in range(len(rest), 0, -1):
        for start in range(len(rest) - size + 1):
            if (name := ".".join(rest[start : start + size])) in by_label:
                other = (*rest[:start], *rest[start + size :])
                target = by_label[name]
                return WheelLabel(text=text, target=target, variant=variant, cuda=cuda, other=other)
    return WheelLabel(text=text, target=None, variant=variant, cuda=cuda, other=tuple(rest))


#: The canary's own local version label (``0.0.0+tfbuild.canary``, written by its wheel packer,
#: tfbuild/recipes/canary/tree/tensorflow/tools/pip_package/pack_wheel.py), which the target's
#: label then extends (``+tfbuild.canary.x86_64v4``).
STANDIN_LABEL = ("tfbuild", "canary")


def is_standin_name(filename: str) -> bool:
    """Is a wheel of this file name the canary's STAND-IN (not TensorFlow)? Its distribution is
    ``tfbuild_canary``, or (a canary built before it had a name of its own, as
    ``tensorflow_cpu-0.0.0+tfbuild.canary...``) its version label is the canary's. A receipt's
    ``standin: true`` says so too: the callers that read one ask it as well."""
    if filename.split("-", 1)[0].lower().replace("-", "_").replace(".", "_") == STANDIN_WHEEL:
        return True
    return parse_label(spelt_label(filename)).other[:2] == STANDIN_LABEL
