"""The receipt of an overlay wheel (``tfbuild overlay``): what it was built from, and what it proved.

Beside the wheel as ``<wheel stem>.json``, like a build's receipt, with its own schema
(``tfbuild.overlay/1``): an overlay has no plan or bazel, but a stock TensorFlow it was compiled
against, the kernels it registers and the numerical check of each, and where it was compiled:
``image`` (:class:`OverlayImage`) for tfbuild's overlay toolchain image, ``null`` for the host's
``compiler`` (``--compiler``; every receipt written before the image existed, which reads the same).
``tfbuild verify`` rebuilds from it, so every value that reaches the compiler's command line, a
Dockerfile or apt is held to a grammar here, after the same bounded JSON read as a build's receipt
(:func:`tfbuild.wheel.receipt.load_json`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from packaging.utils import canonicalize_name

from tfbuild.core import serial
from tfbuild.core.controls import control_in
from tfbuild.core.errors import InputError
from tfbuild.wheel.receipt import (
    IMAGE_ID,
    MAX_TEXT,
    SHA256,
    WheelRecord,
    is_debian_package,
    is_debian_version,
    load_json,
    read_receipt_file,
)

SCHEMA: Final = "tfbuild.overlay/1"
#: The overlay's toolchain images (tfbuild.overlay.image): ``REPOSITORY:<input hash[:16]>``.
IMAGE_REPOSITORY: Final = "tfbuild/overlay-toolchain"
FIX = "Rebuild the overlay with tfbuild overlay, which writes its receipt beside the wheel."

_RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
_CFLAG = re.compile(r"-m[a-z0-9][a-z0-9_=.,+-]{0,127}")
_KERNEL = re.compile(r"[A-Za-z0-9]+:[a-z0-9]+(?:->[a-z0-9]+)?")
_FEATURE = re.compile(r"[a-z0-9_]{1,32}")
#: tfbuild_overlay-RELEASE+LABEL-py3-none-PLATFORM.whl: the platform auditwheel's best manylinux
#: policy for its libraries, or linux_x86_64 where none allows them (tfbuild.overlay.build).
_WHEEL = re.compile(
    r"tfbuild_overlay-[0-9]+\.[0-9]+\.[0-9]+\+[A-Za-z0-9_.]{1,64}-py3-none-"
    r"(?:linux|manylinux_[0-9]+_[0-9]+)_x86_64\.whl"
)
_IMAGE_TAG = re.compile(re.escape(IMAGE_REPOSITORY) + r":[0-9a-f]{16}")
_CLANG = re.compile(r"clang-[0-9]{1,3}")
_SUITE = re.compile(r"[a-z]{2,32}")
_GLIBC = re.compile(r"[0-9]{1,2}\.[0-9]{1,3}")
MAX_PACKAGES = 64  # recorded packages of one stage of the image


@dataclass(frozen=True, kw_only=True)
class KernelCheck:
    """One replaced kernel against stock TensorFlow on the special-value corpus."""

    kernel: str  # "Exp:float32", "Cast:float32->bfloat16"
    values: int
    exact: int
    max_ulp: int
    bound: int  # the most it may differ, in ulp (0: exact)


@dataclass(frozen=True, kw_only=True)
class LeftOut:
    """An instruction set the target has that the kernels were compiled without, and why: the
    system ones no kernel contains (so an overlay for a CPU loads on its virtual machines, whose
    hypervisors hide them), or one the compiler cannot compile the stock headers for."""

    instruction_set: str  # its /proc/cpuinfo name, as the loader and pick name it: "rdseed"
    flag: str  # the compiler flag that left it out: "-mno-rdseed"
    why: str
    system: bool  # a system instruction set (True), or one the compiler cannot build (False)


@dataclass(frozen=True, kw_only=True)
class OverlayImage:
    """Where an overlay was compiled when not on the host: tfbuild's overlay toolchain image."""

    tag: str  # tfbuild/overlay-toolchain:<input hash[:16]>
    id: str  # the image's id, sha256:<hex>
    compiler: str  # the package of the recipe's clang: "clang-18"
    suite: str  # the suite that packages it: "trixie"
    sysroot_suite: str  # whose C library and libstdc++ it compiled against: "bullseye"
    glibc: str  # that suite's glibc, the newest the wheel can need: "2.31"
    #: Each package whose files the compile and link read, name -> version as installed: the
    #: compiler's (clang-18, its headers, LLVM, binutils) and the sysroot's (libc6-dev, libstdc++).
    packages: dict[str, str]
    sysroot_packages: dict[str, str]

    def __post_init__(self) -> None:
        # Written in name order, as a reader compares them.
        object.__setattr__(self, "packages", dict(sorted(self.packages.items())))
        object.__setattr__(self, "sysroot_packages", dict(sorted(self.sysroot_packages.items())))


@dataclass(frozen=True, kw_only=True)
class OverlayReceipt:
    schema: Literal["tfbuild.overlay/1"] = SCHEMA
    created: str
    tfbuild: str
    wheel: WheelRecord
    tensorflow: str  # the release: "2.21.0"
    distribution: str  # the distribution it was built against: "tensorflow-cpu"
    git_version: str
    framework_size: int  # libtensorflow_framework.so.2, as the loader checks it
    framework_sha256: str
    stock: str  # the stock wheel as asked for (a requirement, a file name, or an interpreter)
    target: str
    cflags: tuple[str, ...]
    features: tuple[str, ...]  # what the loader checks, /proc/cpuinfo names
    #: The target's instruction sets its kernels do not contain, each with why (every receipt
    #: written before 2026-11-28 has none: its features name every set its target turns on).
    left_out: tuple[LeftOut, ...] = ()
    compiler: str  # its path on the host; in the image, its name there ("clang++-18")
    compiler_version: str  # the first line of its --version
    image: OverlayImage | None = None  # the toolchain image it was compiled in; None: on the host
    kernels: tuple[str, ...]
    skipped: tuple[str, ...]  # ops or types left to the stock kernels, and why
    checks: tuple[KernelCheck, ...]
    seconds: float
    #: The instruction sets of ``features`` the machine it was built on lacked: its kernels' check
    #: waits for a machine that has them (``tfbuild overlay --check`` where it is installed), and
    #: its loader registers none before. Empty: checked at build time (``checks``).
    pending: tuple[str, ...] = ()

    @property
    def stock_name(self) -> str:
        """The TensorFlow distribution it goes on, normalised as pip names it: ``tensorflow-cpu``."""
        return str(canonicalize_name(self.distribution))


@dataclass(frozen=True, kw_only=True)
class OverlayManifest:
    """What an overlay's wheel says of itself (``tensorflow-plugins/tfbuild_overlay/overlay.json``),
    read where it is installed by ``tfbuild overlay --check``: the kernels its loader registers and
    the instruction sets it checks, and (overlays built since 2026-11-29) whether its check waits
    for this machine, with the kernels' sha256 the check's record names."""

    tensorflow: str
    distribution: str
    git_version: str
    framework_size: int
    target: str
    cflags: tuple[str, ...]
    features: tuple[str, ...]
    compiler: str
    kernels: tuple[str, ...]
    pending: tuple[str, ...] = ()
    token: str = ""  # the kernels' sha256; "" before 2026-11-29


def decode_overlay_manifest(raw: bytes, *, source: str) -> OverlayManifest:
    """The manifest in ``raw``, held to the receipt's grammar; one InputError line otherwise."""
    what = f"{source} is not a tfbuild overlay's manifest"
    fix = "Reinstall the overlay's wheel (pip install --force-reinstall WHEEL)."
    try:
        manifest = serial.from_data(load_json(raw), OverlayManifest)
    except ValueError as exc:
        raise InputError(what, why=str(exc), fix=fix) from None
    rules = [
        ("tensorflow", bool(_RELEASE.fullmatch(manifest.tensorflow))),
        ("target", bool(_WORD.fullmatch(manifest.target))),
        ("features", all(_FEATURE.fullmatch(f) for f in manifest.features)),
        ("pending", set(manifest.pending) <= set(manifest.features)),
        ("token", manifest.token == "" or bool(SHA256.fullmatch(manifest.token))),
        ("kernels", all(_KERNEL.fullmatch(k) for k in manifest.kernels)),
        ("text fields", all(_text_ok(t) for t in (manifest.git_version, manifest.compiler))),
    ]
    broken = next((name for name, fine in rules if not fine), None)
    if broken:
        raise InputError(what, why=f"its {broken} is not what tfbuild writes there", fix=fix)
    return manifest


def _text_ok(value: str) -> bool:
    return len(value) <= MAX_TEXT and control_in(value) is None


def _grammar(receipt: OverlayReceipt) -> str | None:
    """Why a field breaks its grammar, or None."""
    rules: list[tuple[str, bool]] = [
        ("wheel.name", bool(_WHEEL.fullmatch(receipt.wheel.name))),
        ("tensorflow", bool(_RELEASE.fullmatch(receipt.tensorflow))),
        ("distribution", bool(_WORD.fullmatch(receipt.distribution))),
        ("framework_sha256", bool(SHA256.fullmatch(receipt.framework_sha256))),
        ("target", bool(_WORD.fullmatch(receipt.target))),
        ("cflags", all(_CFLAG.fullmatch(f) for f in receipt.cflags)),
        ("features", all(_FEATURE.fullmatch(f) for f in receipt.features)),
        (
            "left_out",
            all(
                _FEATURE.fullmatch(o.instruction_set)
                and re.fullmatch(r"-mno-[a-z0-9]{1,32}", o.flag)
                and o.flag in receipt.cflags
                and _text_ok(o.why)
                for o in receipt.left_out
            ),
        ),
        (
            "pending",
            set(receipt.pending) <= set(receipt.features)
            and not (receipt.pending and receipt.checks),
        ),
        ("kernels", all(_KERNEL.fullmatch(k) for k in receipt.kernels)),
        ("checks", all(_KERNEL.fullmatch(c.kernel) for c in receipt.checks)),
        ("framework_size", 0 < receipt.framework_size < 1 << 40),
    ]
    if (image := receipt.image) is not None:
        rules += [
            ("image.tag", bool(_IMAGE_TAG.fullmatch(image.tag))),
            ("image.id", bool(IMAGE_ID.fullmatch(image.id))),
            ("image.compiler", bool(_CLANG.fullmatch(image.compiler))),
            ("image.suite", bool(_SUITE.fullmatch(image.suite))),
            ("image.sysroot_suite", bool(_SUITE.fullmatch(image.sysroot_suite))),
            ("image.glibc", bool(_GLIBC.fullmatch(image.glibc))),
            ("image.packages", _packages(image.packages) and image.compiler in image.packages),
            ("image.sysroot_packages", _packages(image.sysroot_packages)),
        ]
    texts = (receipt.created, receipt.tfbuild, receipt.git_version, receipt.stock, receipt.compiler)
    rules.append(("text fields", all(_text_ok(t) for t in (*texts, receipt.compiler_version))))
    rules.append(("skipped", all(_text_ok(t) for t in receipt.skipped)))
    broken = next((name for name, fine in rules if not fine), None)
    return f"its {broken} is not what tfbuild writes there" if broken else None


def _packages(packages: dict[str, str]) -> bool:
    return len(packages) <= MAX_PACKAGES and all(
        is_debian_package(name) and is_debian_version(version) for name, version in packages.items()
    )


def decode_overlay_receipt(raw: bytes, *, source: str, charset: str = "utf-8") -> OverlayReceipt:
    """The overlay receipt in ``raw`` (a file's bytes, an HTTP body in ``charset``); one
    :class:`InputError` line for anything else: too large or deep, not JSON, a key twice, NaN or
    infinity, an unknown key or a wrong type, a field out of its grammar."""
    try:
        receipt = serial.from_data(load_json(raw, charset=charset), OverlayReceipt)
    except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError, serial.DecodeFailure
        raise InputError(
            f"{source} is not a tfbuild overlay receipt", why=str(exc), fix=FIX
        ) from None
    broken = _grammar(receipt)
    if broken:
        raise InputError(f"{source} is not a usable overlay receipt", why=broken, fix=FIX)
    return receipt


def read_overlay_receipt(path: Path, *, wheel: Path | None = None) -> OverlayReceipt:
    return read_receipt_file(path, wheel=wheel, decode=decode_overlay_receipt, fix=FIX)


def is_overlay_wheel(wheel: Path) -> bool:
    """An overlay's wheel, by its name (the distribution tfbuild-overlay)."""
    return wheel.name.startswith("tfbuild_overlay-") and wheel.suffix == ".whl"
