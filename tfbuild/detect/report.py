"""Assembling what ``tfbuild detect`` reports, as one frozen value with a stable JSON form.

The JSON schema (``tfbuild.detect/1``) is documented in docs/schemas.md; change it only by adding keys,
or bump the version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tfbuild.detect import cpu, features
from tfbuild.detect.compilers import Compiler, CompilerFlags, flags_for
from tfbuild.detect.cpuinfo import CpuInfo
from tfbuild.detect.cuda_report import CudaReport
from tfbuild.detect.nvidia import NvidiaReport
from tfbuild.detect.system import SystemInfo
from tfbuild.recipes.tfversions import parse_version

if TYPE_CHECKING:
    from tfbuild.recipes.recipe import Recipe

SCHEMA: Literal["tfbuild.detect/1"] = "tfbuild.detect/1"


@dataclass(frozen=True, kw_only=True)
class GuardReport:
    """TensorFlow's cpu_feature_guard features on one machine."""

    applicable: bool
    present: tuple[str, ...]
    absent: tuple[str, ...] = field(init=False)
    features: dict[str, bool] = field(init=False, compare=False)  # every guard feature: present?
    note: str | None = None

    def __post_init__(self) -> None:
        names = features.NAMES if self.applicable else ()
        object.__setattr__(self, "absent", tuple(n for n in names if n not in self.present))
        object.__setattr__(self, "features", {n: n in self.present for n in names})


def guard_report(info: CpuInfo) -> GuardReport:
    if info.architecture == "x86_64":
        return GuardReport(applicable=True, present=features.present(info.flags))
    return GuardReport(
        applicable=False,
        present=(),
        note=f"TensorFlow's cpu_feature_guard checks x86-64 features only; on {info.architecture} "
        "it has nothing to report, and the compiler flags below are the whole optimization",
    )


@dataclass(frozen=True, kw_only=True)
class MachineReport:
    """One machine's CPU: what it is, what TensorFlow checks, and the flags to build for it."""

    cpu: CpuInfo
    microarchitecture: str
    microarchitecture_vendor: str  # the target's vendor ("generic" for x86_64_v4 and friends)
    generic_level: str | None
    ancestors: tuple[str, ...]
    tensorflow_features: GuardReport
    compiler_flags: CompilerFlags | None
    warnings: tuple[str, ...] = ()


def describe_machine(info: CpuInfo, compiler: Compiler) -> MachineReport:
    """Name the machine's CPU and compute the flags a build for exactly this machine passes."""
    target = cpu.identify(info)
    notes: list[str] = []
    if not info.byte_order_known:
        notes.append(
            "a /proc/cpuinfo dump does not say the byte order; reported as big-endian "
            f"{target.name} as archspec does (a little-endian system is {target.name}le)"
        )
    if target.vendor == "generic" and info.architecture == "x86_64":
        nearest = cpu.nearest_named(info)
        if nearest is not None:
            fit = cpu.why_not(nearest, info)
            said = (
                f"archspec names no microarchitecture for this CPU ({fit.reason})"
                if fit.runs
                else f"no named microarchitecture fits (nearest: {fit.reason})"
            )
            notes.append(
                f"{said}; using the generic level {target.name}, which this CPU fully supports"
            )
    guard = guard_report(info)
    flags = flags_for(target, compiler, machine_features=guard.present)
    return MachineReport(
        cpu=info,
        microarchitecture=str(target.name),
        microarchitecture_vendor=str(target.vendor),
        generic_level=cpu.best_generic(info),
        ancestors=tuple(sorted(str(a.name) for a in target.ancestors)),
        tensorflow_features=guard,
        compiler_flags=flags,
        warnings=tuple(notes),
    )


@dataclass(frozen=True, kw_only=True)
class TargetReport:
    """A requested portable target: its flags and whether it runs on each described machine."""

    name: str
    tensorflow_features: tuple[str, ...]  # guard features the target itself guarantees
    compiler_flags: CompilerFlags
    runs_on: tuple[cpu.Fit, ...]  # one answer per described machine


def describe_target(name: str, infos: Sequence[CpuInfo], compiler: Compiler) -> TargetReport:
    target = cpu.lookup_target(name)
    guaranteed = features.present(target.features) if target.family.name == "x86_64" else ()
    return TargetReport(
        name=name,
        tensorflow_features=guaranteed,
        compiler_flags=flags_for(target, compiler, machine_features=guaranteed),
        runs_on=tuple(cpu.why_not(target, info) for info in infos),
    )


@dataclass(frozen=True, kw_only=True)
class TensorflowSupport:
    """One recipe seen from this host: can its wheel be built for, and run on, this machine?"""

    version: str
    python_ok: bool  # this host's Python is in the release's range
    cpu_ok: bool  # TensorFlow ships CPU builds for this architecture (x86_64, aarch64)
    cuda: str | None  # the release's default CUDA (None: no CUDA row)
    cuda_ok: bool | None  # the driver runs that CUDA (None: no driver or no CUDA row)
    note: str


def tensorflow_support(
    recipes: Sequence[Recipe], *, python: str, architecture: str, driver_cuda: str | None
) -> tuple[TensorflowSupport, ...]:
    """Which TensorFlow versions this host can build (for itself) and run, from the recipes."""
    result = []
    for recipe in recipes:
        python_ok = python in recipe.python
        cpu_ok = architecture in ("x86_64", "aarch64")
        cuda = recipe.cuda.cuda if recipe.cuda else None
        cuda_ok = None
        if cuda and driver_cuda:
            cuda_ok = parse_version(cuda)[:2] <= parse_version(driver_cuda)[:2]
        notes = []
        if not python_ok:
            notes.append(f"Python {python} is outside {recipe.python[0]}-{recipe.python[-1]}")
        if not cpu_ok:
            notes.append(f"no TensorFlow builds for {architecture}")
        if cuda_ok is False:
            notes.append(f"the driver supports CUDA {driver_cuda}, the release defaults to {cuda}")
        result.append(
            TensorflowSupport(
                version=recipe.tensorflow,
                python_ok=python_ok,
                cpu_ok=cpu_ok,
                cuda=cuda,
                cuda_ok=cuda_ok,
                note="; ".join(notes),
            )
        )
    return tuple(result)


@dataclass(frozen=True, kw_only=True)
class DetectReport:
    """Everything ``tfbuild detect`` says: its JSON form is ``tfbuild.detect/1``."""

    schema: Literal["tfbuild.detect/1"] = SCHEMA
    live: bool  # True when describing this machine, False for --cpuinfo files
    machines: tuple[MachineReport, ...]
    common: MachineReport | None = None  # the shared target of several --cpuinfo machines
    target: TargetReport | None = None
    why_not: tuple[cpu.Fit, ...] = ()
    system: SystemInfo | None = None
    cuda: CudaReport | None = None
    nvidia: NvidiaReport | None = None
    tensorflow: tuple[TensorflowSupport, ...] | None = None
    warnings: tuple[str, ...] = field(init=False)  # every part's warnings, each once

    def __post_init__(self) -> None:
        found: list[str] = []
        for machine in self.machines:
            found.extend(machine.cpu.warnings)  # what reading its dump left out
            found.extend(machine.warnings)
            if machine.compiler_flags:
                found.extend(machine.compiler_flags.warnings)
        for part in (self.cuda, self.nvidia):
            if part is not None:
                found.extend(part.warnings)
        object.__setattr__(self, "warnings", tuple(dict.fromkeys(found)))
