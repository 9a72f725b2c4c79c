"""Running the detectors for ``tfbuild detect``: the one impure step before the pure report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tfbuild.core.errors import UsageError
from tfbuild.detect import cpu
from tfbuild.detect.compilers import parse_compiler
from tfbuild.detect.cpuinfo import read_cpuinfo
from tfbuild.detect.report import (
    DetectReport,
    describe_machine,
    describe_target,
    tensorflow_support,
)


def gather(
    *,
    cpuinfo_files: Sequence[Path] = (),
    compiler_spec: str | None = None,
    target: str | None = None,
    why_not: Sequence[str] = (),
    with_gpu: bool = True,
) -> DetectReport:
    """Describe this machine, or the machines of saved cpuinfo dumps."""
    from tfbuild.recipes.recipe import load_recipes

    recipes = load_recipes().recipes
    # Without --compiler, flags are spelled for the newest release's compiler: what a build uses.
    compiler = parse_compiler(compiler_spec or recipes[-1].compiler)
    # Validate names before any slow work, so a typo fails at once.
    for name in why_not:
        cpu.lookup_target(name, option="--why-not")
    if target:
        cpu.lookup_target(target)
    live = not cpuinfo_files
    if len(set(cpuinfo_files)) != len(cpuinfo_files):
        raise UsageError(
            "the same --cpuinfo file is given twice", fix="Pass each machine's dump once."
        )
    infos = [read_cpuinfo(p) for p in cpuinfo_files] if cpuinfo_files else [cpu.host_cpuinfo()]
    machines = tuple(describe_machine(info, compiler) for info in infos)
    common = describe_machine(cpu.common_info(infos), compiler) if len(infos) > 1 else None
    fits = tuple(cpu.why_not(cpu.lookup_target(n), info) for n in why_not for info in infos)
    target_report = describe_target(target, infos, compiler) if target else None
    if not live:
        # A dump describes another machine's CPU only: this host's memory, disks and GPUs would
        # be misleading beside it.
        return DetectReport(
            live=False, machines=machines, common=common, target=target_report, why_not=fits
        )
    from tfbuild.detect.system import system_info

    cuda = nvidia = None
    if with_gpu:
        from tfbuild.detect.cuda import locate_cuda
        from tfbuild.detect.nvidia import detect_nvidia

        cuda = locate_cuda()
        nvidia = detect_nvidia()
    system = system_info()
    support = tensorflow_support(
        recipes,
        python=".".join(system.python.version.split(".")[:2]),
        architecture=infos[0].architecture,
        driver_cuda=nvidia.driver.cuda_version if nvidia and nvidia.driver else None,
    )
    return DetectReport(
        live=True,
        machines=machines,
        target=target_report,
        why_not=fits,
        system=system,
        cuda=cuda,
        nvidia=nvidia,
        tensorflow=support,
    )
