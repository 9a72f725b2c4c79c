"""Does one wheel run on one host? Five checks in order; the first that fails is the reason.

Before them, a wheel that is not the file its receipt describes (:attr:`WheelFile.mismatch`: its
sha256 is another) is refused at the ``integrity`` stage: its receipt says nothing about it.

platform, python, glibc (the C and C++ runtimes: glibc, and libstdc++'s GLIBCXX_ versions), cpu,
cuda (see :mod:`tfbuild.pick`). :func:`evaluate` is pure: it reads the wheel's file name, label and
receipt (with its :class:`~tfbuild.wheel.receipt.WheelFloor`), and the :class:`~tfbuild.pick.machine.Host`,
and returns an :class:`Assessment`.

An overlay (``tfbuild overlay``) passes the same platform, python and glibc checks, then two of its
own. **cpu**: its target runs here by the same rule as a wheel's (archspec on instruction sets), and
the CPU has every instruction set its receipt says its loader checks for (``features``, /proc/cpuinfo
names, the loader's own list); where it does not, the loader would not load the kernels (stock ones
would run), which is no use. **tensorflow**: the interpreter pick chooses for has exactly the
TensorFlow the overlay goes on: the distribution and release its receipt names (its wheel's
``Requires-Dist``) and the build it was compiled against (the size of
``libtensorflow_framework.so.2``, which the loader checks too). An overlay without a usable receipt
is refused there: nothing else says which TensorFlow build it goes on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from packaging.tags import Tag
from packaging.utils import parse_wheel_filename

from tfbuild.core.variants import Variant
from tfbuild.detect import cpu
from tfbuild.pick.listing import WheelFile
from tfbuild.pick.machine import IMPLEMENTATIONS, Host
from tfbuild.recipes.tfversions import parse_version
from tfbuild.wheel.labels import (
    NATIVE,
    WheelLabel,
    is_standin_name,
    parse_label,
    spelt_label,
    spelt_version,
)
from tfbuild.wheel.overlay_receipt import OverlayReceipt
from tfbuild.wheel.receipt import Receipt, WheelFloor

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture

Stage = Literal["integrity", "platform", "python", "glibc", "cpu", "cuda", "tensorflow", "ok"]
#: How far a wheel got: a refusal at a later stage is the nearer miss.
STAGE_ORDER: dict[str, int] = {
    "integrity": -1,  # not the wheel its receipt describes: judged on nothing else
    "platform": 0,
    "python": 1,
    "glibc": 2,
    "cpu": 3,
    "cuda": 4,
    "tensorflow": 5,  # an overlay's last check: the TensorFlow installed is the one it goes on
    "ok": 6,
}
UNLABELLED_REASON = "no CPU label: assumed portable (like the stock wheel)"
_ILLEGAL = "would die with Illegal instruction"
#: Said of an overlay whose kernels would not load: it is no use, though nothing breaks.
_NOT_LOADED = "its loader would not load it here (stock kernels would run)"


_INTERPRETER = re.compile(r"([a-z]+?)(\d)(\d*)")
#: manylinux_X_Y_ARCH (glibc X.Y) or musllinux_X_Y_ARCH.
_LINUX = re.compile(r"(many|musl)linux_(\d+)_(\d+)_(.+)")
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


@dataclass(frozen=True, kw_only=True)
class Assessment:
    """One wheel assessed on one host: does it run, and why (not).

    :func:`evaluate` decides the checks; :func:`~tfbuild.pick.rank.pick` fills in ``filtered`` and
    ``rank``.
    """

    wheel: WheelFile
    name: str  # the distribution, normalised
    version: str  # as the file spells it: 2.21.0+x86_64v4
    tensorflow: str  # the public version: 2.21.0
    tags: tuple[str, ...]
    label: WheelLabel
    target: str | None  # the CPU target decided on (the label's, else the receipt's)
    runs: bool
    stage: Stage  # the check that refused it ("ok" when it runs)
    reason: str
    python_rank: int = 0  # 3 exact cpXY, 2 abi3 (or cpXY-none), 1 py3-none; 0 when it does not fit
    standin: bool = False  # the canary's STAND-IN wheel (receipt or label says so), not TensorFlow
    filtered: str | None = None  # why --tf / --variant leaves it out
    # 1 for the chosen wheel, 2... for the others that run and are asked for.
    rank: int | None = None

    @property
    def variant(self) -> Variant:
        return Variant(self.label.variant)

    @property
    def status(self) -> Literal["runs", "refused", "filtered"]:
        if not self.runs:
            return "refused"
        return "filtered" if self.filtered else "runs"


def _platform_arch_ok(arch: str, host: Host) -> bool:
    machine = host.cpu.architecture
    if arch == machine:
        return True
    # A POWER dump does not say its byte order; either wheel may fit.
    return machine == "ppc64" and not host.cpu.byte_order_known and arch in ("ppc64", "ppc64le")


#: What a platform tag asks of the C library: nothing, musl, or glibc X.Y or newer.
_LibcNeed: TypeAlias = "tuple[int, int] | Literal['musl'] | None"


def _platform_check(platform: str, host: Host) -> tuple[str | None, _LibcNeed]:
    """(architecture refusal or None, what the tag asks of the C library) for one platform tag."""
    if platform == "any":
        return None, None
    arch: str | None = None
    need: _LibcNeed = None
    if platform.startswith("linux_"):
        arch = platform[len("linux_") :]
    elif found := _LINUX.fullmatch(platform):
        glibc = (int(found.group(2)), int(found.group(3)))
        need, arch = glibc if found.group(1) == "many" else "musl", found.group(4)
    else:
        legacy, _, rest = platform.partition("_")
        if legacy in _LEGACY_MANYLINUX and rest:
            need, arch = _LEGACY_MANYLINUX[legacy], rest
    if arch is None:
        return f"built for another operating system ({platform})", None
    if not _platform_arch_ok(arch, host):
        return f"built for {arch} ({platform}), but the machine is {host.cpu.architecture}", None
    return None, need


def _glibc_refusal(needed: str, why: str, host: Host) -> str | None:
    """Why a wheel that needs glibc ``needed`` (``why``: which tag or receipt says so) cannot load
    on the host; None when it can, or when the host's C library is not checked."""
    if not host.glibc_checked:
        return None
    if host.glibc is None:
        return f"needs glibc {needed} or newer ({why}), but this machine's C library is not glibc"
    have, want = _numbers(host.glibc), _numbers(needed)
    if have is not None and want is not None and have < want:
        return f"needs glibc {needed} or newer ({why}), but this machine has {host.glibc_text}"
    return None


def _tag_libc_refusal(need: _LibcNeed, platform: str, host: Host) -> str | None:
    if need is None or not host.glibc_checked:
        return None
    if need == "musl":
        return (
            f"built for musl libc ({platform}), but this machine runs {host.glibc_text}"
            if host.glibc
            else None
        )
    return _glibc_refusal(f"{need[0]}.{need[1]}", platform, host)


def _libstdcxx_refusal(floor: WheelFloor | None, host: Host) -> str | None:
    """The receipt's floor against the newest GLIBCXX_ version of the host's libstdc++."""
    if floor is None or not floor.libstdcxx or host.libstdcxx is None:
        return None
    have, want = _numbers(host.libstdcxx), _numbers(floor.libstdcxx)
    if have is None or want is None or have >= want:
        return None
    return (
        f"needs libstdc++ with GLIBCXX_{floor.libstdcxx} (its receipt), but this machine's "
        f"libstdc++ provides only {host.libstdcxx_text}"
    )


def _numbers(text: str) -> tuple[int, ...] | None:
    """``"2.39"`` -> ``(2, 39)``; None for text that is not dotted numbers (an odd receipt)."""
    parts = text.strip().split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _stricter(tag: _LibcNeed, floor: WheelFloor | None) -> bool:
    """Does the receipt's glibc floor ask more than the tag (so its refusal is the reason)?"""
    wanted = _numbers(floor.glibc) if floor is not None and floor.glibc else None
    if wanted is None or tag == "musl":
        return False
    return tag is None or wanted > tag


def python_rank(tag: Tag, host: Host) -> int:
    """How well a tag's interpreter and ABI fit the host's Python: 3 exact, 2 abi3, 1 py3, 0 not."""
    found = _INTERPRETER.fullmatch(tag.interpreter)
    if not found:
        return 0
    kind, major, minor_text = found.group(1), int(found.group(2)), found.group(3)
    minor = int(minor_text) if minor_text else None
    host_major, host_minor = parse_version(host.python)
    if major != host_major:
        return 0
    if kind == "py" or minor is None:
        return 1 if tag.abi == "none" and (minor is None or minor <= host_minor) else 0
    if kind != host.implementation:
        return 0
    if tag.abi == "abi3":
        return 2 if minor <= host_minor else 0
    if minor != host_minor:
        return 0
    if tag.abi == "none":
        return 2
    return 3 if tag.abi.startswith(f"{kind}{major}{minor}") or tag.abi.startswith("pypy") else 0


def _describe_tag(tag: Tag) -> str:
    found = _INTERPRETER.fullmatch(tag.interpreter)
    if not found:
        return f"{tag.interpreter}-{tag.abi}"
    kind, major, minor = found.group(1), found.group(2), found.group(3)
    who = IMPLEMENTATIONS.get(kind, kind)
    version = f"{major}.{minor}" if minor else major
    if tag.abi == "abi3":
        version += " or newer"
    return f"{tag.interpreter}-{tag.abi} ({who} {version})"


def _not_for(
    fit_reason: str, target: Microarchitecture, host: Host, *, here: str = _ILLEGAL
) -> str:
    """A target this CPU cannot run: what it would do ``here`` (this vendor's or a generic one),
    else another vendor's."""
    if target.vendor in (host.cpu.vendor, "generic"):
        return f"{here}: {fit_reason}"
    return f"not for this CPU: {fit_reason}"


def _cpu_check(label: WheelLabel, receipt: Receipt | None, host: Host) -> tuple[bool, str]:
    """(runs, reason) for the CPU part of a wheel: its label's target, else its receipt's."""
    from tfbuild.core.targets import targets

    target = label.target
    source = "label"
    if target is None and receipt is not None and receipt.target:
        target, source = receipt.target, "receipt"
    if target is None:
        if label.other:
            shown = ".".join(label.other)
            return (
                False,
                f"its label segment {shown!r} names no CPU target tfbuild knows (no archspec "
                "microarchitecture), and no receipt says what it was built for",
            )
        return True, UNLABELLED_REASON
    guard = set(host.guard)
    if target == NATIVE:
        if receipt is None:
            return (
                False,
                "built with -march=native on some machine, and no receipt beside it says which "
                "instructions it uses",
            )
        if receipt.architecture and receipt.architecture != host.cpu.architecture:
            return (
                False,
                f"built with -march=native on an {receipt.architecture} machine, but this one is "
                f"{host.cpu.architecture}",
            )
        if not receipt.covered:
            return False, "built with -march=native, and its receipt records no CPU features"
        missing = [f for f in receipt.covered if f not in guard]
        if missing:
            return (
                False,
                "would die with Illegal instruction: built with -march=native on a CPU with "
                f"{', '.join(missing)}, which this CPU lacks (from its receipt)",
            )
        return (
            True,
            f"built with -march=native; every feature its receipt records is here "
            f"({', '.join(receipt.covered)})",
        )
    micro = targets().get(target)
    if micro is None:
        return False, f"its receipt names the target {target!r}, which archspec does not know"
    fit = cpu.why_not(micro, host.cpu)
    if not fit.runs:
        return False, _not_for(fit.reason, micro, host)
    reason = fit.reason + (" (target from its receipt)" if source == "receipt" else "")
    if receipt is not None:
        missing = [f for f in receipt.covered if f not in guard]
        if missing:
            return (
                False,
                f"would die with Illegal instruction: its receipt says the compiler turned on "
                f"{', '.join(missing)}, which this CPU lacks",
            )
        if receipt.covered:
            reason += "; every feature its receipt records is here"
    return True, reason


def _unused(overlay: OverlayReceipt | None) -> dict[str, str]:
    """Flags of a target an overlay's kernels cannot depend on: those that are no instruction sets,
    and those its receipt says were left out of its kernels (what each is, and the flag)."""
    left = overlay.left_out if overlay is not None else ()
    return {
        **cpu.NOT_INSTRUCTION_SETS,
        **{o.instruction_set: f"{o.why.split(': ')[0]}; left out: {o.flag}" for o in left},
    }


def _overlay_cpu_check(
    target: str | None, overlay: OverlayReceipt | None, host: Host
) -> tuple[bool, str]:
    """(runs, reason) for an overlay: its target (its receipt's, else its label's) by a wheel's
    rule, then every instruction set its receipt says the loader checks for."""
    from tfbuild.core.targets import targets

    if target is None:
        return False, "its label names no CPU target, and no receipt says what it is for"
    reason = ""
    if target == NATIVE:
        if overlay is None:
            return (
                False,
                "compiled with -march=native on some machine, and no receipt beside it says "
                "which instructions its loader checks for",
            )
        reason = "compiled with -march=native"
    elif (micro := targets().get(target)) is None:
        return False, f"it names the target {target!r}, which archspec does not know"
    else:
        fit = cpu.why_not(
            micro, host.cpu, unused=_unused(overlay), because="which its kernels do not contain"
        )
        if not fit.runs:  # another vendor's target: refused as a wheel is, whatever it loads
            return False, _not_for(fit.reason, micro, host, here=_NOT_LOADED)
        reason = fit.reason
    if overlay is not None:
        present = cpu.instruction_sets(host.cpu)
        missing = [f for f in overlay.features if f not in present]
        if missing:
            return (
                False,
                f"{_NOT_LOADED}: it checks the CPU for {', '.join(missing)}, which this CPU lacks "
                "(from its receipt)",
            )
        reason += "; the CPU has every instruction set its loader checks for"
    return True, reason


def _tensorflow_check(overlay: OverlayReceipt | None, host: Host) -> tuple[bool, str]:
    """Does the interpreter pick chooses for have exactly the TensorFlow the overlay goes on?"""
    if overlay is None:
        return (
            False,
            "no usable receipt beside it says which TensorFlow build it goes on (an overlay is "
            "judged by its receipt; tfbuild overlay writes it)",
        )
    need = f"{overlay.stock_name} {overlay.tensorflow}"
    have = host.tensorflow
    if have is None:
        return False, f"goes on {need}, but {host.tensorflow_source}"
    if have.distribution != overlay.stock_name or have.version != overlay.tensorflow:
        return False, f"goes on {need}, but {have.python} has {have.text}"
    if have.framework_size != overlay.framework_size:
        size = "none" if have.framework_size is None else f"{have.framework_size} bytes"
        return (
            False,
            f"goes on the {need} it was compiled against, but the {have.text} of {have.python} "
            f"is another build (libtensorflow_framework.so.2: {size}, not "
            f"{overlay.framework_size}); {_NOT_LOADED}",
        )
    return True, f"goes on the {have.text} of {have.python}, the build it was compiled against"


def _cuda_check(cuda: str, host: Host) -> tuple[bool, str]:
    if host.driver_cuda is None and host.driver_source.startswith("NVIDIA driver"):
        return (
            False,
            f"a CUDA {cuda} build, but the CUDA release the driver supports is unknown "
            f"({host.driver_source}); state it with --driver-cuda X.Y",
        )
    if host.driver_cuda is None:
        return False, f"a CUDA {cuda} build, but there is no GPU here ({host.driver_source})"
    if parse_version(host.driver_cuda)[:2] < parse_version(cuda)[:2]:
        from tfbuild.detect.nvidia import min_driver_for_cuda

        minimum = min_driver_for_cuda(cuda)
        need = f" (CUDA {cuda} needs driver {minimum} or newer)" if minimum else ""
        return (
            False,
            f"a CUDA {cuda} build, but the driver supports only CUDA {host.driver_cuda}{need}",
        )
    return True, f"a CUDA {cuda} build; the driver supports CUDA {host.driver_cuda}"


def evaluate(wheel: WheelFile, host: Host) -> Assessment:
    """Does this wheel run on the host? The first failed check is the reason."""
    name, version, _build, tagset = parse_wheel_filename(wheel.filename)
    tags = sorted(tagset, key=str)
    label = parse_label(spelt_label(wheel.filename) or version.local)
    # The canary's STAND-IN: its receipt says so, or its name (tfbuild_canary) or version label
    # (0.0.0+tfbuild.canary) does.
    standin = bool(wheel.receipt and wheel.receipt.standin) or is_standin_name(wheel.filename)

    def assessment(
        stage: Stage, reason: str, *, target: str | None = None, rank: int = 0
    ) -> Assessment:
        return Assessment(
            wheel=wheel,
            name=str(name),
            version=spelt_version(wheel.filename),
            tensorflow=version.public,
            tags=tuple(str(t) for t in tags),
            label=label,
            target=target or label.target or (wheel.receipt.target if wheel.receipt else None),
            runs=stage == "ok",
            stage=stage,
            reason=reason,
            python_rank=rank,
            standin=standin,
        )

    if wheel.mismatch is not None:
        return assessment("integrity", wheel.mismatch)
    checks = [(t, *_platform_check(t.platform, host)) for t in tags]
    arch_ok = [(t, need) for t, arch, need in checks if arch is None]
    if not arch_ok:
        return assessment("platform", checks[0][1] or "")
    fitting = [(t, need) for t, need in arch_ok if python_rank(t, host)]
    if not fitting:
        described = ", ".join(sorted({_describe_tag(t) for t, _ in arch_ok}))
        return assessment(
            "python",
            f"built for {described}, not the {host.python_text} here ({host.python_source})",
        )
    # The C runtimes: the tags' glibc and the receipt's floor (the stricter decides), then the
    # receipt's libstdc++ floor.
    floor = wheel.receipt.floor if wheel.receipt is not None else None
    refusals = [(t, need, _tag_libc_refusal(need, t.platform, host)) for t, need in fitting]
    usable = [t for t, _need, refusal in refusals if refusal is None]
    floor_refusal = None  # the newest GLIBC_ symbol version the wheel's ELF files need
    if floor is not None and floor.glibc:
        floor_refusal = _glibc_refusal(
            floor.glibc, f"its receipt: GLIBC_{floor.glibc} symbols", host
        )
    if not usable:
        _tag, need, refusal = refusals[0]
        stricter = floor_refusal if floor_refusal and _stricter(need, floor) else None
        return assessment("glibc", stricter or refusal or "")
    if floor_refusal:
        return assessment("glibc", floor_refusal)
    if libstdcxx_refusal := _libstdcxx_refusal(floor, host):
        return assessment("glibc", libstdcxx_refusal)
    rank = max(python_rank(t, host) for t in usable)
    if wheel.is_overlay:
        target = wheel.overlay.target if wheel.overlay is not None else label.target
        runs, reason = _overlay_cpu_check(target, wheel.overlay, host)
        if not runs:
            return assessment("cpu", reason, target=target, rank=rank)
        tf_ok, tf_reason = _tensorflow_check(wheel.overlay, host)
        if not tf_ok:
            return assessment("tensorflow", tf_reason, target=target, rank=rank)
        return assessment("ok", f"{reason}; {tf_reason}", target=target, rank=rank)
    runs, reason = _cpu_check(label, wheel.receipt, host)
    if not runs:
        return assessment("cpu", reason, rank=rank)
    if label.cuda:
        cuda_ok, cuda_reason = _cuda_check(label.cuda, host)
        if not cuda_ok:
            return assessment("cuda", cuda_reason, rank=rank)
        reason = f"{reason}; {cuda_reason}"
    return assessment("ok", reason, rank=rank)
