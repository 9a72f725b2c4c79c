"""Naming a CPU with archspec's microarchitectures, for any machine a cpuinfo dump describes.

archspec's own ``host()`` and ``why_not()`` read the machine they run on. tfbuild plans builds for
other machines too (``--cpuinfo``), so this module applies archspec's selection rule to a parsed dump:
keep the targets of the dump's architecture family whose vendor matches and whose features the CPU
has, pick the best generic level (x86_64_v2/v3/v4), then the most specific descendant of it. A test
checks that on the live machine the result equals ``archspec.cpu.host()``.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.core.targets import targets
from tfbuild.detect import features
from tfbuild.detect.cpuinfo import CpuInfo, parse_cpuinfo, read_cpuinfo
from tfbuild.detect.values import FlagSet

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture


def family_root(architecture: str) -> str:
    """archspec's root target name for an architecture (``armv7l`` has none: ``arm``)."""
    return {"i686": "x86", "armv7l": "arm"}.get(architecture, architecture)


def _partial(info: CpuInfo) -> Microarchitecture:
    from archspec.cpu import Microarchitecture

    return Microarchitecture(
        name="",
        parents=[],
        vendor=info.vendor,
        features=set(info.flags),
        compilers={},
        generation=info.generation or 0,
        cpu_part=info.cpu_part or "",
    )


def _in_family(target: Microarchitecture, root: str) -> bool:
    arch_root = targets().get(root)
    return arch_root is not None and (target == arch_root or arch_root in target.ancestors)


def _compatible(info: Microarchitecture, target: Microarchitecture, root: str) -> bool:
    """archspec's per-family compatibility rule, applied to a dump instead of the live host."""
    if not _in_family(target, root):
        return False
    if root in ("ppc64", "ppc64le"):
        return bool(target.generation <= (info.generation or 0))
    if root == "aarch64" and target.vendor == "generic" and target.name != "aarch64":
        return False
    if root == "riscv64":
        return bool(target.name == info.name or target.vendor == "generic")
    return bool(
        target.vendor in (info.vendor, "generic") and target.features.issubset(info.features)
    )


def _depth(target: Microarchitecture) -> tuple[int, int]:
    return len(target.ancestors), len(target.features)


def compatible_targets(info: CpuInfo) -> list[Microarchitecture]:
    """Every archspec target a CPU with this dump's features can run code for."""
    root = family_root(info.architecture)
    partial = _partial(info)
    return [t for t in targets().values() if _compatible(partial, t, root)]


def identify(info: CpuInfo) -> Microarchitecture:
    """The most specific archspec target for the dump (archspec's ``host()`` rule)."""
    from archspec.cpu import generic_microarchitecture

    candidates = compatible_targets(info)
    if not candidates:
        return generic_microarchitecture(info.architecture)
    generic = [c for c in candidates if c.vendor == "generic"]
    best_generic = max(generic, key=_depth)
    if info.cpu_part and any(c.cpu_part == info.cpu_part for c in candidates):
        candidates = [c for c in candidates if c.cpu_part == info.cpu_part]
    specific = [c for c in candidates if c > best_generic]
    return max(specific, key=_depth) if specific else best_generic


def best_generic(info: CpuInfo) -> str | None:
    """The best vendor-neutral level (x86_64_v3, ...) or None outside x86-64."""
    levels = [t for t in compatible_targets(info) if t.vendor == "generic"]
    if info.architecture != "x86_64" or not levels:
        return None
    return str(max(levels, key=_depth).name)


def nearest_named(info: CpuInfo) -> Microarchitecture | None:
    """The vendor's named target this CPU misses by the fewest features, when none fits.

    Virtual machines often hide a few flags (Zen 5 guests without ``pku``), and archspec then falls
    back to a generic level; naming the near miss tells the user why.
    """
    identified = identify(info)
    if identified.vendor != "generic":
        return None
    family = targets().get(family_root(info.architecture))
    near = [
        t
        for t in targets().values()
        if t.vendor == info.vendor and t > identified and t.family == family
    ]
    return min(near, key=lambda t: (len(t.features - info.flags), -len(t.ancestors)), default=None)


#: What lists every target name: archspec's CLI has no such command (``archspec cpu`` prints only
#: the host), so the names are the keys of archspec's table with tfbuild's additions
#: (:mod:`tfbuild.core.targets`), printed by tfbuild's Python.
LIST_TARGETS = "python -m tfbuild.core.targets"


def lookup_target(name: str, *, option: str = "--target") -> Microarchitecture:
    """An archspec target by name; unknown names are a usage error (naming ``option``, the option
    that gave it) with suggestions."""
    import difflib

    if name in targets():
        return targets()[name]
    close = difflib.get_close_matches(name.replace("-", "_"), list(targets()), n=3)
    hint = f"Did you mean {', '.join(close)}? " if close else ""
    raise UsageError(
        f"unknown {option} {name!r}",
        why="it is not an archspec microarchitecture name",
        fix=f"{hint}Portable levels are x86_64_v2, x86_64_v3, x86_64_v4; "
        f"{LIST_TARGETS} lists every name (with tfbuild's Python).",
    )


@dataclass(frozen=True, kw_only=True)
class Fit:
    """Whether code built for a target runs on a machine, and why not if it does not."""

    target: str
    machine: str  # the cpuinfo source the answer is about
    runs: bool
    reason: str


#: Flags archspec lists among some x86-64 targets' features (archspec-json's
#: cpu/microarchitectures.json, as shipped in archspec 0.2.7 and still at archspec-json commit
#: 90b453f4053b6b139d1d2cb78c463b02e71ef363: zen4 and zen5 have flush_l1d and pku, zen5 tsc_adjust,
#: zen3 pku) that no compiled code can come to depend on, so a wheel built for such a target is not
#: refused for lacking them. Hypervisors hide them (the project's Zen 4 and Zen 5 VMs lack
#: flush_l1d and pku; archspec-json#38, #84). archspec-json's own rule for a target's features is
#: "what the compiler's -march for it turns on" (its #77 dropped erms and avic from zen4 because
#: "these two flags do not represent any compiler options", #131 dropped cppc and #145
#: ibrs_enhanced from zen5 for the same reason). Each entry is one flag with what it is, in the
#: words of the Linux kernel (arch/x86/include/asm/cpufeatures.h) and its documentation:
NOT_INSTRUCTION_SETS: dict[str, str] = {
    # cpufeatures.h: X86_FEATURE_FLUSH_L1D "Flush L1D cache", a command written to the
    # IA32_FLUSH_CMD MSR with WRMSR, which only the kernel may run; no compiler has an option for it.
    "flush_l1d": "a cache-flush command the kernel writes to a model-specific register",
    # cpufeatures.h: X86_FEATURE_TSC_ADJUST "TSC adjustment MSR 0x3B"; no compiler option either.
    "tsc_adjust": "a time-stamp counter register only the kernel writes",
    # cpufeatures.h: X86_FEATURE_PKU "Protection Keys for Userspace". Its two instructions,
    # RDPKRU/WRPKRU, act on a protection key, and Documentation/core-api/protection-keys.rst (torvalds/
    # linux commit 30c0923370175a01a806b23d797f1d9f2f3e4f40): "Before a pkey can be used, it must
    # first be allocated with pkey_alloc()", a system call that fails where the CPU or the kernel
    # has none. Compilers never emit them on their own (only the _rdpkru_u32/_wrpkru intrinsics do),
    # so code reaches them only after the kernel granted a key at run time, never because of -march.
    "pku": "protection keys, usable only once the kernel grants one at run time",
}


def why_not(
    target: Microarchitecture,
    info: CpuInfo,
    *,
    unused: Mapping[str, str] = NOT_INSTRUCTION_SETS,
    because: str = "which compiled code cannot depend on",
) -> Fit:
    """Explain whether ``target`` fits the machine the dump describes (archspec's wording), with
    ``unused`` flags left out of the comparison (flag -> what it is): by default the flags that are
    not instruction sets (:data:`NOT_INSTRUCTION_SETS`), which a hypervisor hides and no compiled
    code depends on; an overlay adds the instruction sets its kernels were compiled without."""
    fit = _archspec_fit(target, info)
    if fit.runs or info.architecture != "x86_64":
        return fit
    lacking = sorted((target.features & unused.keys()) - info.flags)
    if not lacking:
        return fit
    lifted = _archspec_fit(target, replace(info, flags=FlagSet(info.flags | set(lacking))))
    if not lifted.runs:
        return lifted  # names only the instruction sets the CPU lacks
    what = ", ".join(f"{flag} ({unused[flag]})" for flag in lacking)
    return replace(
        lifted,
        reason=f"{target.name} runs here: the CPU has every instruction set it needs; it lacks "
        f"only {what}, {because}",
    )


def _archspec_fit(target: Microarchitecture, info: CpuInfo) -> Fit:
    """archspec's own rule: the target's features are all the CPU's, or an ancestor's."""
    detected = identify(info)
    name = str(target.name)

    def fit(runs: bool, reason: str) -> Fit:
        return Fit(target=name, machine=info.source, runs=runs, reason=reason)

    if target == detected:
        return fit(True, f"{name} is this machine's microarchitecture")
    root = family_root(info.architecture)
    if not _in_family(target, root):
        return fit(
            False,
            f"{name} belongs to the {target.family.name} architecture family, "
            f"but the machine is {info.architecture}",
        )
    if target < detected:
        return fit(True, f"{name} runs here: it is an ancestor of the detected {detected.name}")
    partial = _partial(info)
    if _compatible(partial, target, root):
        return fit(True, f"{name} runs here, though {detected.name} was chosen as the better match")
    if root in ("ppc64", "ppc64le"):
        return fit(
            False,
            f"{name} needs POWER generation {target.generation}, "
            f"but the machine is generation {info.generation or 0}",
        )
    if target.vendor not in (info.vendor, "generic"):
        return fit(
            False, f"{name} targets vendor {target.vendor}, but the CPU vendor is {info.vendor}"
        )
    missing = sorted(target.features - partial.features)
    return fit(False, f"{name} requires features the CPU lacks: {', '.join(missing)}")


def common_info(infos: Sequence[CpuInfo]) -> CpuInfo:
    """A virtual CPU with only what all the machines share: build for it to run on all of them."""
    first = infos[0]
    arches = sorted({i.architecture for i in infos})
    if len(arches) > 1:
        raise UnsupportedError(
            "no common target for these machines",
            why=f"they are of different architectures ({', '.join(arches)})",
            fix="Plan one wheel per architecture: pass the --cpuinfo files of each separately.",
        )
    vendors = {i.vendor for i in infos}
    parts = {i.cpu_part for i in infos}
    flags = frozenset.intersection(*(frozenset(i.flags) for i in infos))
    return CpuInfo(
        source=" + ".join(i.source for i in infos),
        architecture=first.architecture,
        vendor=first.vendor if len(vendors) == 1 else "generic",
        brand=None,
        flags=FlagSet(flags),
        cpu_part=first.cpu_part if len(parts) == 1 else None,
        generation=min(i.generation or 0 for i in infos) or None,
        processors_listed=0,
        warnings=tuple(dict.fromkeys(w for i in infos for w in i.warnings)),
    )


def host_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    """The live machine's dump; the architecture comes from the kernel (it knows ppc64 vs ppc64le)."""
    info = read_cpuinfo(path) if path.exists() else parse_cpuinfo("", source=str(path))
    machine = platform.machine()
    if machine and family_root(machine) != info.architecture and machine.startswith("ppc64"):
        info = replace(info, architecture=machine)
    return info


#: The one instruction set /proc/cpuinfo names otherwise than archspec and an overlay's loader:
#: SSE3, which the kernel calls "pni" (Prescott New Instructions).
_LOADER_NAMES = {"pni": "sse3"}


def instruction_sets(info: CpuInfo) -> frozenset[str]:
    """The CPU's flags by the names an overlay's loader checks (/proc/cpuinfo's, sse3 for pni)."""
    flags = set(info.flags)
    return frozenset(flags | {_LOADER_NAMES[f] for f in flags if f in _LOADER_NAMES})


def guard_features(info: CpuInfo) -> tuple[str, ...]:
    """The TensorFlow cpu_feature_guard features this machine has (x86-64 only)."""
    return features.present(info.flags) if info.architecture == "x86_64" else ()
