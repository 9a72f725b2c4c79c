"""Resources: how many compile jobs, how much memory for bazel, and whether the disk has room.

The disk is a fact of the moment, never of the plan: ``tfbuild wheel`` refuses a build the disk
cannot hold (:func:`check_disk`, before anything is fetched or built), ``tfbuild plan`` warns
(:func:`disk_warning`), and the plan itself only says how much a build needs.
"""

from __future__ import annotations

from tfbuild.core.cache import cache_root
from tfbuild.core.errors import EnvironmentProblem, UnsupportedError
from tfbuild.detect.host import HostFacts
from tfbuild.detect.system import Disk, disk_for
from tfbuild.plan.model import GIB, MIB, Reason, Resources
from tfbuild.plan.options import MIN_JVM_HEAP_MB, MIN_LOCAL_RAM_MB, PlanOptions

#: Memory a compile job may take: clang on TensorFlow's largest translation units peaks near 2.5 GB;
#: CUDA units (clang in CUDA mode, or nvcc) need more.
JOB_MIB = {"cpu": 2560, "mkl": 2560, "cuda": 4096}
#: Free disk a build needs where caches and output live (bazel output base, caches, the wheel).
DISK_NEEDED_GIB = {"cpu": 40, "mkl": 40, "cuda": 70}
#: Memory left to the system beside bazel's server heap and its actions.
SYSTEM_MIB = 1024
#: Jobs against a remote executor: TensorFlow's own ``build:rbe_base --jobs=800`` (.bazelrc,
#: tensorflow/tensorflow commit 0071ad1d1f9e35ead7169c50dbe754ce5c27cae1). The workers' cores bound
#: them, not this host's; --local_ram_resources still bounds the actions that run here.
REMOTE_JOBS = 800
#: Below this many cores a TensorFlow build takes many hours (thousands of compile actions).
FEW_CPUS = 4


def few_cpus(cpus: int) -> tuple[str, str] | None:
    """``(what, advice)`` when ``cpus`` make a TensorFlow build slow, else None: the one wording
    of the plan's warning and of ``tfbuild doctor``'s check."""
    if cpus >= FEW_CPUS:
        return None
    return (
        f"with {cpus} cpus a TensorFlow build takes many hours",
        "Use a remote cache (--remote-cache URL) or a machine with more cores for real builds.",
    )


def slow_build_warning(options: PlanOptions, host: HostFacts) -> str | None:
    """The plan's warning for few cores (a TensorFlow build only: the canary is a minute; and none
    once a remote cache or executor is given, the advice it would give)."""
    slow = few_cpus(host.build_cpus)
    if slow is None or options.canary or options.remote_cache or options.remote_executor:
        return None
    what, advice = slow
    return f"{what}. {advice}"


def _check_memory(options: PlanOptions, memory_mib: int, jvm: int, per_job: int) -> None:
    """Refuse memory settings beyond the machine: a heap or a budget bigger than its memory, or
    a heap that leaves bazel's compile actions less than one job's worth."""
    max_heap = memory_mib - SYSTEM_MIB - per_job
    usable = f"this build host has {memory_mib} MiB of usable memory"
    if options.jvm_heap and jvm > max_heap:
        instead = (
            f"Pass at most --jvm-heap {max_heap}, or"
            if max_heap >= MIN_JVM_HEAP_MB
            else "Use more memory, or"
        )
        raise UnsupportedError(
            f"--jvm-heap {jvm} is more than this machine's memory"
            if jvm > memory_mib
            else f"--jvm-heap {jvm} leaves bazel's compile actions no room",
            why=f"{usable}; the heap, {SYSTEM_MIB} MiB for the system and one compile job "
            f"({per_job} MiB) must fit in it",
            fix=f"{instead} leave it out (the default is a tenth of memory).",
        )
    local_ram = options.local_ram_resources
    if local_ram and local_ram > memory_mib - jvm:
        raise UnsupportedError(
            f"--local-ram-resources {local_ram} is more than this machine's memory"
            if local_ram > memory_mib
            else f"--local-ram-resources {local_ram} and the {jvm} MiB bazel server heap are more "
            "than this machine's memory",
            why=f"{usable}; bazel would start actions for memory that is not there, and the "
            "kernel would kill the compilers",
            fix="Pass at most --local-ram-resources "
            f"{max(MIN_LOCAL_RAM_MB, memory_mib - jvm - SYSTEM_MIB)}, "
            "or leave it out (the default is memory less the heap and 1 GiB for the system).",
        )


def choose_resources(options: PlanOptions, host: HostFacts) -> tuple[Resources, list[Reason]]:
    """bazel's jobs, memory budget and server heap from this host's cores and memory, and the disk
    a build needs (--jobs within bazel's range was checked when the request was made)."""
    variant = options.variant
    memory_mib = (host.build_memory_bytes or 8 * GIB) // MIB
    memory_note = "" if host.build_memory_bytes else " (memory unknown: assumed 8 GiB)"
    heap_cap = 6144 if variant == "cuda" else 4096
    jvm = options.jvm_heap or max(1024, min(heap_cap, memory_mib // 10))
    per_job = JOB_MIB[variant]
    if host.build_memory_bytes:  # an unknown size cannot be checked: 8 GiB is only assumed
        _check_memory(options, memory_mib, jvm, per_job)
    local_ram = options.local_ram_resources or max(1024, memory_mib - jvm - SYSTEM_MIB)
    by_memory = max(1, local_ram // per_job)
    if options.jobs:
        jobs, jobs_why = options.jobs, "asked for with --jobs"
    elif options.remote_executor:
        jobs, jobs_why = (
            REMOTE_JOBS,
            f"remote execution: TensorFlow's own rbe_base runs {REMOTE_JOBS} jobs",
        )
    else:
        jobs = max(1, min(host.build_cpus, by_memory))
        jobs_why = (
            f"min({host.build_cpus} cpus, {local_ram} MiB / {per_job} MiB per compile job)"
            + memory_note
        )
    reasons = [
        Reason(what="jobs", value=str(jobs), why=jobs_why),
        Reason(
            what="local_ram_resources",
            value=f"{local_ram} MiB",
            why="asked for"
            if options.local_ram_resources
            else f"{memory_mib} MiB memory less the bazel server heap and 1 GiB for the system",
        ),
        Reason(
            what="bazel server heap",
            value=f"{jvm} MiB",
            why="asked for"
            if options.jvm_heap
            else f"a tenth of memory, between 1 GiB and {heap_cap // 1024} GiB",
        ),
    ]
    return (
        Resources(
            jobs=jobs,
            local_ram_mb=local_ram,
            jvm_heap_mb=jvm,
            disk_needed_gib=DISK_NEEDED_GIB[variant],
        ),
        reasons,
    )


def _disk_short(options: PlanOptions, free_bytes: int | None) -> tuple[float, int] | None:
    """``(free GiB, needed GiB)`` when ``free_bytes`` are less than a build of ``options`` needs;
    None when they are enough, unknown, or the build is the canary (a stand-in of megabytes)."""
    if free_bytes is None or options.canary:
        return None
    needed = DISK_NEEDED_GIB[options.variant]
    free = round(free_bytes / GIB, 1)
    return (free, needed) if free < needed else None


def disk_warning(options: PlanOptions, host: HostFacts) -> str | None:
    """The plan's warning when this build host's disk holds less than the build needs (none with
    --skip-disk-check): a plan writes nothing, so it warns; ``tfbuild wheel`` is the one to refuse."""
    short = _disk_short(options, host.build_disk_free_bytes)
    if short is None or host.build_disk_path is None or options.skip_disk_check:
        return None
    free, needed = short
    return (
        f"a {options.variant} build needs about {needed} GiB free at {host.build_disk_path}, "
        f"{free} GiB are free: tfbuild wheel will refuse to start. Free some space, point "
        "TFBUILD_CACHE_DIR at a larger disk, or pass --skip-disk-check."
    )


def check_disk(options: PlanOptions, disk: Disk | None) -> None:
    """Refuse a build of ``options`` that ``disk`` cannot hold (``tfbuild wheel``, before anything
    is fetched or built), unless --skip-disk-check; an unknown disk is not second-guessed."""
    if disk is None or options.skip_disk_check:
        return
    short = _disk_short(options, disk.free_bytes)
    if short is None:
        return
    free, needed = short
    raise EnvironmentProblem(
        f"not enough free disk for a {options.variant} build at {disk.path}",
        why=f"{free} GiB free, about {needed} GiB needed for bazel's output, caches and the wheel",
        fix="Free some space, point TFBUILD_CACHE_DIR at a larger disk, or pass --skip-disk-check.",
    )


def check_disk_here(options: PlanOptions) -> None:
    """:func:`check_disk` on this host's disk where builds go ($TFBUILD_CACHE_DIR, else
    ~/.cache/tfbuild): what ``tfbuild wheel`` checks before it connects to Docker."""
    check_disk(options, disk_for(cache_root()))
