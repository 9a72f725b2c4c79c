"""The build host and the machine a wheel is for: what planning needs from detection."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from tfbuild.detect import cpu
from tfbuild.detect.cpuinfo import CpuInfo, read_cpuinfo


@dataclass(frozen=True, kw_only=True)
class HostFacts:
    """What planning needs from detection (the build host, and the machine the wheel is for)."""

    machine: CpuInfo  # the machine the wheel is for
    machine_is_build_host: bool
    build_cpus: int
    build_memory_bytes: int | None
    build_disk_path: str | None
    build_disk_free_bytes: int | None
    python: str  # the build host's Python X.Y
    driver_version: str | None = None
    driver_cuda: str | None = None  # the newest CUDA the driver supports
    gpu_capabilities: tuple[str, ...] = ()  # "8.9", from the GPUs
    # The build host's architecture (platform.machine()); None: the machine's own (a build on the
    # machine itself, or a nominal runner of the same architecture).
    build_architecture: str | None = None

    @property
    def build_host_architecture(self) -> str:
        """The architecture the build runs on: its toolchain image, compiler and tools are for it."""
        return self.build_architecture or self.machine.architecture


def host_facts(*, cpuinfo: Path | None = None, with_gpu: bool = False) -> HostFacts:
    """What the planner needs: the machine the wheel is for, and this build host's resources."""
    from tfbuild.detect.system import system_info

    system = system_info()
    machine = read_cpuinfo(cpuinfo) if cpuinfo else cpu.host_cpuinfo()
    driver_version = driver_cuda = None
    capabilities: tuple[str, ...] = ()
    if with_gpu and cpuinfo is None:
        from tfbuild.detect.nvidia import detect_nvidia

        nvidia = detect_nvidia()
        if nvidia.driver is not None:
            driver_version, driver_cuda = nvidia.driver.version, nvidia.driver.cuda_version
        capabilities = tuple(g.compute_capability for g in nvidia.gpus if g.compute_capability)
    return HostFacts(
        machine=machine,
        machine_is_build_host=cpuinfo is None,
        build_cpus=system.usable_cpus,
        build_memory_bytes=system.memory.usable_bytes,
        build_disk_path=system.disk.path if system.disk else None,
        build_disk_free_bytes=system.disk.free_bytes if system.disk else None,
        python=".".join(system.python.version.split(".")[:2]),
        driver_version=driver_version,
        driver_cuda=driver_cuda,
        gpu_capabilities=capabilities,
        build_architecture=platform.machine() or None,
    )
