"""Assembling what ``tfbuild detect`` reports, as one frozen value with a stable JSON form.

The JSON schema (``tfbuild.detect/1``) is documented in the README; change it only by adding keys,
or bump the version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tfbuild.detect import cpu, features
from tfbuild.detect.compilers import Compiler, CompilerFlags, flags_for
from tfbuild.detect.cpuinfo import CpuInfo

if TYPE_CHECKING:
    from tfbuild.detect.cuda import CudaReport
    from tfbuild.detect.nvidia import NvidiaReport
    from tfbuild.detect.system import SystemInfo

SCHEMA = "tfbuild.detect/1"


@dataclass(frozen=True, kw_only=True)
class GuardReport:
    """TensorFlow's cpu_feature_guard features on one machine."""

    applicable: bool
    present: tuple[str, ...]
    note: str = ""

    @property
    def absent(self) -> tuple[str, ...]:
        return tuple(n for n in features.NAMES if n not in self.present) if self.applicable else ()

    def to_json(self) -> dict[str, Any]:
        return {
            "applicable": self.applicable,
            "present": list(self.present),
            "absent": list(self.absent),
            "features": {n: n in self.present for n in features.NAMES} if self.applicable else {},
            "note": self.note or None,
        }


def guard_report(info: CpuInfo) -> GuardReport:
    if info.architecture == "x86_64":
        return GuardReport(applicable=True, present=cpu.guard_features(info))
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
    vendor: str  # the target's vendor ("generic" for x86_64_v4 and friends)
    generic_level: str | None
    ancestors: tuple[str, ...]
    guard: GuardReport
    flags: CompilerFlags | None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "cpu": self.cpu.to_json(),
            "microarchitecture": self.microarchitecture,
            "microarchitecture_vendor": self.vendor,
            "generic_level": self.generic_level,
            "ancestors": list(self.ancestors),
            "tensorflow_features": self.guard.to_json(),
            "compiler_flags": self.flags.to_json() if self.flags else None,
            "warnings": list(self.warnings),
        }


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
        vendor=str(target.vendor),
        generic_level=cpu.best_generic(info),
        ancestors=tuple(sorted(str(a.name) for a in target.ancestors)),
        guard=guard,
        flags=flags,
        warnings=tuple(notes),
    )


@dataclass(frozen=True, kw_only=True)
class TargetReport:
    """A requested portable target: its flags and whether it runs on each described machine."""

    name: str
    guard_features: tuple[str, ...]  # guard features the target itself guarantees
    flags: CompilerFlags
    fits: tuple[cpu.Fit, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tensorflow_features": list(self.guard_features),
            "compiler_flags": self.flags.to_json(),
            "runs_on": [f.to_json() for f in self.fits],
        }


def describe_target(name: str, infos: Sequence[CpuInfo], compiler: Compiler) -> TargetReport:
    target = cpu.lookup_target(name)
    guaranteed = features.present(target.features) if target.family.name == "x86_64" else ()
    return TargetReport(
        name=name,
        guard_features=guaranteed,
        flags=flags_for(target, compiler, machine_features=guaranteed),
        fits=tuple(cpu.why_not(target, info) for info in infos),
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

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "python_ok": self.python_ok,
            "cpu_ok": self.cpu_ok,
            "cuda": self.cuda,
            "cuda_ok": self.cuda_ok,
            "note": self.note,
        }


def tensorflow_support(
    recipes: Sequence[Any], *, python: str, architecture: str, driver_cuda: str | None
) -> tuple[TensorflowSupport, ...]:
    """Which TensorFlow versions this host can build (for itself) and run, from the recipes."""
    result = []
    for recipe in recipes:
        python_ok = python in recipe.python
        cpu_ok = architecture in ("x86_64", "aarch64")
        cuda = recipe.cuda.cuda if recipe.cuda else None
        cuda_ok = None
        if cuda and driver_cuda:
            need = tuple(int(p) for p in cuda.split(".")[:2])
            cuda_ok = need <= tuple(int(p) for p in driver_cuda.split(".")[:2])
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
    """Everything ``tfbuild detect`` says."""

    live: bool  # True when describing this machine, False for --cpuinfo files
    machines: tuple[MachineReport, ...]
    common: MachineReport | None = None  # the shared target of several --cpuinfo machines
    target: TargetReport | None = None
    why_not: tuple[cpu.Fit, ...] = ()
    system: SystemInfo | None = None
    cuda: CudaReport | None = None
    nvidia: NvidiaReport | None = None
    tensorflow: tuple[TensorflowSupport, ...] | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        found: list[str] = []
        for machine in self.machines:
            found.extend(machine.warnings)
            if machine.flags:
                found.extend(machine.flags.warnings)
        for part in (self.cuda, self.nvidia):
            if part is not None:
                found.extend(part.warnings)
        return tuple(dict.fromkeys(found))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "live": self.live,
            "machines": [m.to_json() for m in self.machines],
            "common": self.common.to_json() if self.common else None,
            "target": self.target.to_json() if self.target else None,
            "why_not": [f.to_json() for f in self.why_not],
            "system": self.system.to_json() if self.system else None,
            "cuda": self.cuda.to_json() if self.cuda else None,
            "nvidia": self.nvidia.to_json() if self.nvidia else None,
            "tensorflow": None
            if self.tensorflow is None
            else [t.to_json() for t in self.tensorflow],
            "warnings": list(self.warnings),
        }
