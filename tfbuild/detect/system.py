"""Facts about the machine tfbuild runs on: OS, Python, glibc, memory, disk, cores and caches.

Every reader takes its root (``/``) as an argument so that tests can point it at a recorded tree.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tfbuild.core.cache import cache_root


@dataclass(frozen=True, kw_only=True)
class PythonInfo:
    version: str  # "3.11.7"
    implementation: str  # "CPython"
    executable: str
    abi_tag: str  # "cp311"


@dataclass(frozen=True, kw_only=True)
class Memory:
    total_bytes: int | None
    available_bytes: int | None
    cgroup_limit_bytes: int | None  # a container's memory limit, when one is set
    #: What a build can count on: the smaller of the machine's memory and the cgroup limit.
    usable_bytes: int | None = field(init=False)

    def __post_init__(self) -> None:
        values = [v for v in (self.total_bytes, self.cgroup_limit_bytes) if v]
        object.__setattr__(self, "usable_bytes", min(values) if values else None)


@dataclass(frozen=True, kw_only=True)
class Disk:
    path: str  # where builds would go (the tfbuild cache directory, or its nearest existing parent)
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True, kw_only=True)
class Cache:
    level: int
    type: str  # Data, Instruction, Unified
    size_kib: int
    shared_by: int  # logical CPUs sharing one instance


@dataclass(frozen=True, kw_only=True)
class SystemInfo:
    os: str  # PRETTY_NAME from os-release, or platform.system()
    kernel: str
    machine: str  # platform.machine()
    glibc: str | None
    python: PythonInfo
    logical_cpus: int
    usable_cpus: int  # what this process may use (affinity, e.g. a container's --cpuset-cpus)
    caches: tuple[Cache, ...]
    memory: Memory
    disk: Disk | None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def os_name(root: Path) -> str:
    for candidate in ("etc/os-release", "usr/lib/os-release"):
        text = _read(root / candidate)
        if text:
            found = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
            if found:
                return found.group(1)
    return platform.system()


def glibc_version() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        text = ""
    found = re.search(r"glibc (\S+)", text)
    return found.group(1) if found else None


def parse_meminfo(text: str) -> tuple[int | None, int | None]:
    values = {}
    for line in text.splitlines():
        found = re.match(r"(\w+):\s+(\d+) kB", line)
        if found:
            values[found.group(1)] = int(found.group(2)) * 1024
    return values.get("MemTotal"), values.get("MemAvailable")


def cgroup_memory_limit(root: Path) -> int | None:
    """The cgroup v2 (``memory.max``) or v1 limit of this process's group, None when unlimited."""
    for candidate in ("sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = (_read(root / candidate) or "").strip()
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def _size_kib(text: str) -> int | None:
    found = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not found:
        return None
    return int(found.group(1)) * {"": 1, "K": 1, "M": 1024, "G": 1024**2}[found.group(2)]


def _cpulist_len(text: str) -> int:
    count = 0
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            count += int(hi) - int(lo) + 1
        elif part:
            count += 1
    return count


def caches(root: Path) -> tuple[Cache, ...]:
    """CPU 0's caches from sysfs, outermost last."""
    result = []
    base = root / "sys/devices/system/cpu/cpu0/cache"
    for index in sorted(base.glob("index*")):
        level = (_read(index / "level") or "").strip()
        kind = (_read(index / "type") or "").strip()
        size = _size_kib(_read(index / "size") or "")
        shared = _read(index / "shared_cpu_list") or ""
        if level.isdigit() and kind and size is not None:
            result.append(
                Cache(level=int(level), type=kind, size_kib=size, shared_by=_cpulist_len(shared))
            )
    return tuple(sorted(result, key=lambda c: (c.level, c.type)))


def disk_for(path: Path) -> Disk | None:
    """Free space where ``path`` is, or would be once created."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        usage = shutil.disk_usage(probe)
    except OSError:
        return None
    return Disk(path=str(path), free_bytes=usage.free, total_bytes=usage.total)


def _abi_prefix() -> str:
    # The interpreter part of a wheel's tag: cp311 for CPython 3.11, pp311 for PyPy.
    name = sys.implementation.name
    return {"cpython": "cp", "pypy": "pp"}.get(name, name)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's --cpuset-cpus, taskset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def system_info(*, root: Path = Path("/"), build_dir: Path | None = None) -> SystemInfo:
    """Describe the machine tfbuild runs on."""
    total, available = parse_meminfo(_read(root / "proc/meminfo") or "")
    logical = os.cpu_count() or 1
    usable = usable_cpus()
    version = platform.python_version()
    return SystemInfo(
        os=os_name(root),
        kernel=platform.release(),
        machine=platform.machine(),
        glibc=glibc_version(),
        python=PythonInfo(
            version=version,
            implementation=platform.python_implementation(),
            executable=sys.executable,
            abi_tag=_abi_prefix() + f"{sys.version_info.major}{sys.version_info.minor}",
        ),
        logical_cpus=logical,
        usable_cpus=usable,
        caches=caches(root),
        memory=Memory(
            total_bytes=total,
            available_bytes=available,
            cgroup_limit_bytes=cgroup_memory_limit(root),
        ),
        disk=disk_for(build_dir or cache_root()),
    )
