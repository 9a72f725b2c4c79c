"""Resources: how many compile jobs, how much memory for bazel, and whether the disk has room."""

from __future__ import annotations

from tfbuild.detect.host import HostFacts
from tfbuild.errors import EnvironmentProblem
from tfbuild.plan.model import GIB, MIB, PlanOptions, Reason, Resources

#: Memory a compile job may take: clang on TensorFlow's largest translation units peaks near 2.5 GB;
#: CUDA units (clang in CUDA mode, or nvcc) need more.
JOB_MIB = {"cpu": 2560, "mkl": 2560, "cuda": 4096}
#: Free disk a build needs where caches and output live (bazel output base, caches, the wheel).
DISK_NEEDED_GIB = {"cpu": 40, "mkl": 40, "cuda": 70}


def choose_resources(options: PlanOptions, host: HostFacts) -> tuple[Resources, list[Reason]]:
    """bazel's jobs, memory budget and server heap from this host's cores and memory; the disk check."""
    variant = options.variant
    memory_mib = (host.build_memory_bytes or 8 * GIB) // MIB
    memory_note = "" if host.build_memory_bytes else " (memory unknown: assumed 8 GiB)"
    heap_cap = 6144 if variant == "cuda" else 4096
    jvm = options.jvm_heap_mb or max(1024, min(heap_cap, memory_mib // 10))
    local_ram = options.local_ram_mb or max(1024, memory_mib - jvm - 1024)
    per_job = JOB_MIB[variant]
    by_memory = max(1, local_ram // per_job)
    jobs = options.jobs or max(1, min(host.build_cpus, by_memory))
    reasons = [
        Reason(
            what="jobs",
            value=str(jobs),
            why="asked for with --jobs"
            if options.jobs
            else f"min({host.build_cpus} cpus, {local_ram} MiB / {per_job} MiB per compile job)"
            + memory_note,
        ),
        Reason(
            what="local_ram_resources",
            value=f"{local_ram} MiB",
            why="asked for"
            if options.local_ram_mb
            else f"{memory_mib} MiB memory less the bazel server heap and 1 GiB for the system",
        ),
        Reason(
            what="bazel server heap",
            value=f"{jvm} MiB",
            why="asked for"
            if options.jvm_heap_mb
            else f"a tenth of memory, between 1 GiB and {heap_cap // 1024} GiB",
        ),
    ]
    needed = DISK_NEEDED_GIB[variant]
    free = (
        round(host.build_disk_free_bytes / GIB, 1)
        if host.build_disk_free_bytes is not None
        else None
    )
    if free is not None and free < needed and not options.skip_disk_check:
        raise EnvironmentProblem(
            f"not enough free disk for a {variant} build at {host.build_disk_path}",
            why=f"{free} GiB free, about {needed} GiB needed for bazel's output, caches and the wheel",
            fix="Free some space, point TFBUILD_CACHE_DIR at a larger disk, or pass "
            "--skip-disk-check.",
        )
    return (
        Resources(
            jobs=jobs,
            local_ram_mb=local_ram,
            jvm_heap_mb=jvm,
            disk_needed_gib=needed,
        ),
        reasons,
    )
