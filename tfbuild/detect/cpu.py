"""Naming a CPU with archspec's microarchitectures, for any machine a cpuinfo dump describes.

archspec's own ``host()`` and ``why_not()`` read the machine they run on. tfbuild plans builds for
other machines too (``--cpuinfo``), so this module applies archspec's selection rule to a parsed dump:
keep the targets of the dump's architecture family whose vendor matches and whose features the CPU
has, pick the best generic level (x86_64_v2/v3/v4), then the most specific descendant of it. A test
checks that on the live machine the result equals ``archspec.cpu.host()``.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfbuild.detect import features
from tfbuild.detect.cpuinfo import CpuInfo, parse_cpuinfo, read_cpuinfo
from tfbuild.errors import UnsupportedError, UsageError

if TYPE_CHECKING:
    from archspec.cpu import Microarchitecture


@functools.cache
def _targets() -> dict[str, Microarchitecture]:
    from archspec.cpu import TARGETS

    return dict(TARGETS)


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
        generation=info.generation,
        cpu_part=info.cpu_part,
    )


def _compatible(info: Microarchitecture, target: Microarchitecture, root: str) -> bool:
    """archspec's per-family compatibility rule, applied to a dump instead of the live host."""
    targets = _targets()
    arch_root = targets[root]
    in_family = target == arch_root or arch_root in target.ancestors
    if not in_family:
        return False
    if root in ("ppc64", "ppc64le"):
        return bool(target.generation <= info.generation)
    if root == "aarch64":
        if target.vendor == "generic" and target.name != "aarch64":
            return False
        return bool(
            target.vendor in (info.vendor, "generic") and target.features.issubset(info.features)
        )
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
    targets = _targets()
    if root not in targets:
        return []
    partial = _partial(info)
    return [t for t in targets.values() if _compatible(partial, t, root)]


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
    root = family_root(info.architecture)
    targets = _targets()
    if root not in targets:
        return None
    near = [
        t
        for t in targets.values()
        if t.vendor == info.vendor and t > identified and t.family == targets[root]
    ]
    if not near:
        return None
    return min(near, key=lambda t: (len(t.features - info.flags), -len(t.ancestors)))


def lookup_target(name: str) -> Microarchitecture:
    """An archspec target by name; unknown names are a usage error with suggestions."""
    import difflib

    targets = _targets()
    if name in targets:
        return targets[name]
    close = difflib.get_close_matches(name.replace("-", "_"), list(targets), n=3)
    hint = f"Did you mean {', '.join(close)}? " if close else ""
    raise UsageError(
        f"unknown --target {name!r}",
        why="it is not an archspec microarchitecture name",
        fix=f"{hint}Portable levels are x86_64_v2, x86_64_v3, x86_64_v4; "
        "'python -m archspec cpu' lists all names.",
    )


@dataclass(frozen=True, kw_only=True)
class Fit:
    """Whether code built for a target runs on a machine, and why not if it does not."""

    target: str
    machine: str  # the cpuinfo source the answer is about
    runs: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "machine": self.machine,
            "runs": self.runs,
            "reason": self.reason,
        }


def why_not(target: Microarchitecture, info: CpuInfo) -> Fit:
    """Explain whether ``target`` fits the machine the dump describes (archspec's wording)."""
    detected = identify(info)
    name = str(target.name)
    if target == detected:
        return Fit(
            target=name,
            machine=info.source,
            runs=True,
            reason=f"{name} is this machine's microarchitecture",
        )
    root = family_root(info.architecture)
    targets = _targets()
    arch_root = targets.get(root)
    if arch_root is None or not (target == arch_root or arch_root in target.ancestors):
        return Fit(
            target=name,
            machine=info.source,
            runs=False,
            reason=f"{name} belongs to the {target.family.name} architecture family, "
            f"but the machine is {info.architecture}",
        )
    if target < detected:
        return Fit(
            target=name,
            machine=info.source,
            runs=True,
            reason=f"{name} runs here: it is an ancestor of the detected {detected.name}",
        )
    partial = _partial(info)
    if _compatible(partial, target, root):
        return Fit(
            target=name,
            machine=info.source,
            runs=True,
            reason=f"{name} runs here, though {detected.name} was chosen as the better match",
        )
    if root in ("ppc64", "ppc64le"):
        reason = (
            f"{name} needs POWER generation {target.generation}, "
            f"but the machine is generation {info.generation}"
        )
    elif target.vendor not in (info.vendor, "generic"):
        reason = f"{name} targets vendor {target.vendor}, but the CPU vendor is {info.vendor}"
    else:
        missing = sorted(target.features - partial.features)
        reason = f"{name} requires features the CPU lacks: {', '.join(missing)}"
    return Fit(target=name, machine=info.source, runs=False, reason=reason)


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
    flags = frozenset.intersection(*(i.flags for i in infos))
    return replace(
        first,
        source=" + ".join(i.source for i in infos),
        vendor=first.vendor if len(vendors) == 1 else "generic",
        brand=None,
        family=None,
        model=None,
        stepping=None,
        flags=flags,
        cpu_part=first.cpu_part if len(parts) == 1 else "",
        generation=min(i.generation for i in infos),
        processors_listed=0,
        logical_cpus=None,
        physical_cores=None,
        sockets=None,
        cache_size_kib=None,
        mhz=None,
    )


def host_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    """The live machine's dump; the architecture comes from the kernel (it knows ppc64 vs ppc64le)."""
    info = read_cpuinfo(path) if path.exists() else parse_cpuinfo("", source=str(path))
    machine = platform.machine()
    if machine and family_root(machine) != info.architecture and machine.startswith("ppc64"):
        info = replace(info, architecture=machine, byte_order_known=True)
    return info


def guard_features(info: CpuInfo) -> tuple[str, ...]:
    """The TensorFlow cpu_feature_guard features this machine has (x86-64 only)."""
    return features.present(info.flags) if info.architecture == "x86_64" else ()
