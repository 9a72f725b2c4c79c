"""The target: the CPU the wheel is built for, the compiler flags for it, and what they cover."""

from __future__ import annotations

from dataclasses import dataclass

from tfbuild.core.errors import UnsupportedError, UsageError
from tfbuild.detect import cpu, features
from tfbuild.detect.compilers import CompilerFlags, Coverage, flags_for, parse_compiler
from tfbuild.detect.host import HostFacts
from tfbuild.plan.model import Reason, TargetKind
from tfbuild.plan.options import PlanOptions
from tfbuild.recipes.recipe import Recipe


@dataclass(frozen=True, kw_only=True)
class Target:
    """The target's name and kind, its compiler flags, and the guard features they turn on."""

    name: str  # archspec name, or "native"
    kind: TargetKind
    flags: CompilerFlags | None  # None for -march=native
    cflags: tuple[str, ...]
    coverage: tuple[Coverage, ...]
    reasons: tuple[Reason, ...]


def _family(architecture: str, *, byte_order_known: bool = True) -> str:
    """archspec's family of an architecture; a POWER dump does not tell ppc64 from ppc64le."""
    family = cpu.family_root(architecture)
    return family if byte_order_known else family.removesuffix("le")


def _an(architecture: str) -> str:
    """``an aarch64``, ``an x86_64``, ``a ppc64le``."""
    return f"{'an' if architecture[:1] in 'aeiox' else 'a'} {architecture}"


def check_architecture(options: PlanOptions, host: HostFacts) -> None:
    """Refuse a wheel for another architecture than the build host's (``--target`` of another
    family, or a ``--cpuinfo`` machine of one): tfbuild builds natively, in a toolchain image of
    the build host's architecture, so its bazelisk, compiler flags and TCMalloc path would be
    for the wrong machine. ``tfbuild matrix`` leaves such combinations out by this same check."""
    build = host.build_host_architecture
    if options.target:
        family = str(cpu.lookup_target(options.target).family.name)
        if _family(family) == _family(build):
            return
        what = f"--target {options.target} is {_an(family)} target, and this build host is {build}"
    else:
        machine = host.machine
        known = machine.byte_order_known
        if _family(machine.architecture, byte_order_known=known) == _family(
            build, byte_order_known=known
        ):
            return
        family = machine.architecture
        what = f"the machine of {machine.source} is {family}, and this build host is {build}"
    raise UnsupportedError(
        what,
        why="tfbuild builds natively, without a cross compiler (the toolchain image, bazelisk, "
        "the compiler and its flags are the build host's)",
        fix=f"Run tfbuild on {_an(family)} machine: until cross-compilation is real, a wheel is "
        "built on the architecture it is for.",
    )


def choose_target(options: PlanOptions, recipe: Recipe, host: HostFacts) -> Target:
    """The machine, portable target or -march=native the wheel is built for, and its flags."""
    compiler = parse_compiler(recipe.compiler)
    if options.native:
        if not host.machine_is_build_host or options.target:
            raise UsageError(
                "--native builds for the machine that runs the build",
                why="-march=native would describe the build host, not the machine the wheel is for",
                fix="Drop --native: tfbuild spells the target machine's flags explicitly "
                "(from --cpuinfo or --target), which is what a build for another machine needs.",
            )
        return Target(
            name="native",
            kind="native",
            flags=None,
            cflags=("-march=native",),
            # what the build host has: recorded, so that tfbuild pick can tell where it runs
            coverage=tuple(
                Coverage(feature=f, flag="-march=native") for f in cpu.guard_features(host.machine)
            ),
            reasons=(Reason(what="target", value="-march=native", why="asked for with --native"),),
        )
    if options.target:
        target = cpu.lookup_target(options.target)
        kind: TargetKind = "portable"
        have = features.present(target.features) if target.family.name == "x86_64" else ()
        why = "a portable target: only what every CPU of that level has, never this host's extras"
    else:
        target = cpu.identify(host.machine)
        kind = "machine"
        have = cpu.guard_features(host.machine)
        who = "this host" if host.machine_is_build_host else host.machine.source
        why = (
            f"the microarchitecture of {who} (archspec), with every TensorFlow guard feature it "
            "has enabled"
        )
    flags = flags_for(target, compiler, machine_features=have)
    return Target(
        name=str(target.name),
        kind=kind,
        flags=flags,
        cflags=tuple(flags.flags),
        coverage=flags.coverage,
        reasons=(Reason(what="target", value=str(target.name), why=why),),
    )
