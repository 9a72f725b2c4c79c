"""The machine's FP32 ceiling as measured: a tiny FMA loop, probed until the best stops improving.

:func:`measure_fma_peak` compiles ``peak_kernel.c`` (shipped with this module: 12 independent FMA
chains on the widest vectors ``-march=native`` allows) and runs probes: one copy alone (the
single-process figure), then one copy per physical core at the same time, each pinned to its own
core (the all-cores figure). Every copy warms up (0.2 s) before it counts, and probes repeat (up to
3, stopping once one raises neither best figure by more than 2 %, within a time budget) because
other work only ever slows a probe down: the best of them is the real ceiling at the clock the
machine runs under load. :mod:`tfbuild.measure.peak` sets it beside the nominal figure, per thread
count.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tfbuild.core.commands import run_command
from tfbuild.core.errors import UsageError
from tfbuild.core.rounded import Round3, round_fields

#: The kernel's C source, shipped next to this module (in the wheel too): 12 independent
#: multiply-add chains on the widest vectors the compiler enables; its header comment says more.
KERNEL_SOURCE = "peak_kernel.c"


def fma_kernel() -> str:
    """The C source of the FMA kernel, read from the package (a source tree or an installed wheel)."""
    return resources.files("tfbuild.measure").joinpath(KERNEL_SOURCE).read_text(encoding="utf-8")


#: Flag sets tried in order: -march=native is what the baseline measured; some Arm compilers only
#: know -mcpu=native; the last resort is the compiler's default target.
_FLAG_SETS: tuple[tuple[str, ...], ...] = (
    ("-O2", "-march=native"),
    ("-O2", "-mcpu=native"),
    ("-O2",),
)
_LINE = re.compile(r"isa=(\S+) lanes=(\d+) gflops=([0-9.]+) seconds=([0-9.]+) checksum=(\S+)")
_COMPILE_TIMEOUT = 60.0


#: How a probe is taken and how often: every copy of the kernel warms up for WARMUP_SECONDS (the
#: clocks reach their steady value under load) before it counts; probes repeat up to MAX_PROBES
#: times and stop, after the second, at the first that raises neither best figure by more than
#: MIN_GAIN. The lengths per probe are the caller's (smoke: 0.5 s counted with --quick, 1 s without).
WARMUP_SECONDS = 0.2
MAX_PROBES = 3
MIN_GAIN = 0.02


@dataclass(frozen=True, kw_only=True)
class MeasuredPeak:
    """FP32 FMA throughput measured on this machine: the best of repeated probes.

    A probe runs one copy of the kernel alone (the single-process figure: one core, at the clock one
    busy core reaches), then one pinned copy per physical core at once (the all-cores figure, summed).
    Each figure is the best over the probes: other work on the machine only ever slows a probe down,
    so the best one is the nearest to the ceiling. :attr:`sources` says where each figure came from.
    """

    gflops_total: Round3  # best all-cores figure: the sum over the copies that ran at once
    gflops_per_process: tuple[Round3, ...]  # the copies of the probe that gave gflops_total
    gflops_single: Round3  # best single-process figure
    isa: str  # avx512, avx2, avx, sse, neon, generic: what the kernel was compiled for
    lanes: int
    compiler: str
    flags: tuple[str, ...]
    seconds: float  # counted time per copy in each probe (after its warm-up)
    cpus: tuple[int, ...]  # the CPU each copy of the all-cores run was pinned to; empty: not pinned
    warmup: float = 0.0  # warm-up time per copy before it counts
    probes: int = 1  # how many probes ran
    singles: tuple[Round3, ...] = ()  # each probe's single-process figure, in order
    totals: tuple[Round3, ...] = ()  # each probe's all-cores figure, in order
    single_spread: float = 0.0  # (best - worst) / best over singles
    total_spread: float = 0.0  # (best - worst) / best over totals
    stopped: str = ""  # why no more probes ran, one sentence
    sources: tuple[str, ...] = ()  # where each figure came from, one sentence each

    def __post_init__(self) -> None:
        # Exact figures, written to 3 decimals, whatever float the maker passed. A peak made from
        # one measurement is one probe: its lists are that measurement.
        round_fields(
            self, "gflops_total", "gflops_single", "single_spread", "total_spread", kind=Round3
        )
        per_process = tuple(Round3(g) for g in self.gflops_per_process)
        object.__setattr__(self, "gflops_per_process", per_process)
        singles = tuple(Round3(g) for g in self.singles) or (self.gflops_single,)
        totals = tuple(Round3(g) for g in self.totals) or (self.gflops_total,)
        object.__setattr__(self, "singles", singles)
        object.__setattr__(self, "totals", totals)


@dataclass(frozen=True, kw_only=True)
class ProbeRun:
    """One probe: one copy of the kernel alone, then one copy per core at once."""

    single: float  # GFLOP/s of the lone copy
    single_cpu: int | None  # the CPU the lone copy was pinned to; None: not pinned
    per_process: tuple[float, ...]  # GFLOP/s of each copy that ran at once
    isa: str
    lanes: int

    @property
    def total(self) -> float:
        """The all-cores figure: every copy that ran at once, summed."""
        return sum(self.per_process)


def probe_count(count: int) -> str:
    return f"{count} probe" if count == 1 else f"{count} probes"


def _raises_a_best(run: ProbeRun, earlier: Sequence[ProbeRun], min_gain: float) -> bool:
    best_single = max(r.single for r in earlier)
    best_total = max(r.total for r in earlier)
    return run.single > best_single * (1 + min_gain) or run.total > best_total * (1 + min_gain)


def repeat_probes(
    probe: Callable[[int], ProbeRun | None],
    *,
    max_probes: int = MAX_PROBES,
    min_gain: float = MIN_GAIN,
    budget: float | None = None,
    started: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[tuple[ProbeRun, ...], str]:
    """Call ``probe(0)``, ``probe(1)``, ... and return the runs and a sentence saying why they stopped.

    They stop after ``max_probes``; after the second, at the first that raises neither the best
    single-process nor the best all-cores figure by more than ``min_gain`` (a fraction); at a probe
    that fails (None; no runs at all if the first does); and, from the third on, before a probe that
    would end more than ``budget`` seconds after ``started`` (judged by the longest probe so far). Two
    probes always run when allowed: the best of one is no best. Nothing here times anything but
    through ``clock``, so a test drives it with a list of runs and a fake clock.
    """
    begun = clock() if started is None else started
    runs: list[ProbeRun] = []
    longest = 0.0
    while True:
        done = len(runs)
        if done >= max_probes:
            return tuple(runs), f"Ran {probe_count(done)}, the most it runs."
        if budget is not None and done >= 2 and clock() + longest > begun + budget:
            return tuple(runs), (
                f"Ran {probe_count(done)}: another would end past the {budget:g} s the whole "
                "measurement may take."
            )
        before = clock()
        run = probe(done)
        longest = max(longest, clock() - before)
        if run is None:
            failed = f"Ran {probe_count(done)}: probe {done + 1} failed to run."
            return tuple(runs), failed if runs else "The first probe failed to run."
        runs.append(run)
        if done >= 1 and not _raises_a_best(run, runs[:-1], min_gain):
            return tuple(runs), (
                f"Ran {probe_count(done + 1)}: probe {done + 1} raised neither best figure by "
                f"more than {min_gain:.0%}."
            )


def _spread(values: Sequence[float]) -> float:
    best = max(values)
    return (best - min(values)) / best if best > 0 else 0.0


def best_of(
    runs: Sequence[ProbeRun],
    *,
    stopped: str,
    compiler: str,
    flags: tuple[str, ...],
    seconds: float,
    warmup: float,
    cpus: tuple[int, ...],
) -> MeasuredPeak:
    """The measured peak of ``runs`` (at least one): the best single and the best all-cores figure,
    each from whichever probe gave it, with every probe's figures, their spread and the sentences."""
    if not runs:
        raise UsageError("cannot take the best of no FMA probes", fix="Run at least one probe.")
    singles = tuple(r.single for r in runs)
    totals = tuple(r.total for r in runs)
    best_single = max(runs, key=lambda r: r.single)
    best_total = max(runs, key=lambda r: r.total)
    count = len(runs)
    lone = (
        f"pinned to CPU {best_single.single_cpu}"
        if best_single.single_cpu is not None
        else "not pinned (this system cannot pin processes)"
    )
    copies = len(best_total.per_process)
    where = (
        f"one pinned to each physical core (CPUs {', '.join(str(c) for c in cpus)})"
        if cpus
        else "not pinned (this system cannot pin processes)"
    )
    timing = f"each copy warmed up for {warmup:g} s, then counted for {seconds:g} s"
    sources = (
        f"Single process: {best_single.single:.1f} GFLOP/s, the best of {probe_count(count)} "
        f"({min(singles):.1f} to {max(singles):.1f}, a spread of {_spread(singles):.1%}); one copy "
        f"of the kernel alone, {lone}, {timing}.",
        f"All cores: {best_total.total:.1f} GFLOP/s, the best of {probe_count(count)} "
        f"({min(totals):.1f} to {max(totals):.1f}, a spread of {_spread(totals):.1%}); "
        f"{copies} cop{'y' if copies == 1 else 'ies'} of the kernel at once, {where}, {timing}, "
        "summed.",
    )
    return MeasuredPeak(
        gflops_total=Round3(best_total.total),
        gflops_per_process=tuple(Round3(g) for g in best_total.per_process),
        gflops_single=Round3(best_single.single),
        isa=runs[0].isa,
        lanes=runs[0].lanes,
        compiler=compiler,
        flags=flags,
        seconds=seconds,
        cpus=cpus,
        warmup=warmup,
        probes=count,
        singles=tuple(Round3(g) for g in singles),
        totals=tuple(Round3(g) for g in totals),
        single_spread=Round3(_spread(singles)),
        total_spread=Round3(_spread(totals)),
        stopped=stopped,
        sources=sources,
    )


@dataclass(frozen=True, kw_only=True)
class _Run:
    isa: str
    lanes: int
    gflops: float


def one_cpu_per_core() -> list[int]:
    """The CPUs this process may use, one per physical core (SMT siblings share FMA units).

    Uses Linux's sysfs topology; elsewhere (or when it is unreadable) every usable CPU is listed.
    """
    if not hasattr(os, "sched_getaffinity"):
        return list(range(os.cpu_count() or 1))
    allowed = sorted(os.sched_getaffinity(0))
    seen: set[tuple[str, str]] = set()
    chosen: list[int] = []
    for cpu in allowed:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            key = (
                (topology / "physical_package_id").read_text().strip(),
                (topology / "core_id").read_text().strip(),
            )
        except OSError:
            return allowed
        if key not in seen:
            seen.add(key)
            chosen.append(cpu)
    return chosen or allowed


def _compile(compiler: list[str], workdir: Path) -> tuple[Path, tuple[str, ...]] | None:
    source = workdir / "fmapeak.c"
    binary = workdir / "fmapeak"
    source.write_text(fma_kernel())
    for flags in _FLAG_SETS:
        result = run_command(
            [*compiler, *flags, "-o", str(binary), str(source)], timeout=_COMPILE_TIMEOUT
        )
        if result is not None and result.returncode == 0 and binary.is_file():
            return binary, flags
    return None


def _run_together(
    binary: Path, count: int, seconds: float, warmup: float, cpus: list[int]
) -> list[_Run] | None:
    """Run ``count`` copies at once (pinned when ``cpus`` is given); None if any fails."""
    procs: list[subprocess.Popen[str]] = []
    try:
        barrier_read, barrier_write = os.pipe()
        try:
            for index in range(count):
                proc = subprocess.Popen(  # argv is built here, never by a shell
                    [str(binary), repr(seconds), repr(warmup)],
                    stdin=barrier_read,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    errors="replace",
                )
                procs.append(proc)
                if cpus:
                    with contextlib.suppress(OSError):  # pinning is best effort
                        os.sched_setaffinity(proc.pid, {cpus[index % len(cpus)]})
        finally:
            os.close(barrier_read)
            os.close(barrier_write)  # every copy sees end-of-file on stdin and starts now
        runs: list[_Run] = []
        for proc in procs:
            out, _err = proc.communicate(timeout=seconds + warmup + 30.0)
            match = _LINE.search(out)
            if proc.returncode != 0 or match is None:
                return None
            runs.append(_Run(isa=match[1], lanes=int(match[2]), gflops=float(match[3])))
        return runs
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for proc in procs:  # after a failure or an interrupt, leave no copy running
            if proc.poll() is None:
                proc.kill()
            if proc.stdout is not None and not proc.stdout.closed:
                proc.communicate()


def measure_fma_peak(
    *,
    compiler: str = "cc",
    processes: int | None = None,
    seconds: float = 0.5,
    warmup: float = WARMUP_SECONDS,
    max_probes: int = MAX_PROBES,
    budget: float | None = None,
) -> MeasuredPeak | None:
    """Measure FP32 FMA GFLOP/s, the best of repeated probes (:func:`repeat_probes`).

    Each probe runs one copy alone, then ``processes`` copies at once (summed), every copy warmed up
    for ``warmup`` seconds and counted for ``seconds``. ``budget`` caps the whole measurement,
    compiling included, from the third probe on. Returns None when no compiler works (or the kernel
    it builds does not run), so that callers fall back to :func:`theoretical_peak`. The kernel is
    compiled in a temporary directory that is removed afterwards. ``processes`` defaults to the
    number of physical cores this process may use; the lone copy moves from core to core, probe
    after probe, so that one busy core does not decide the single-process figure.
    """
    started = time.monotonic()
    if seconds <= 0:
        raise UsageError(f"cannot measure for {seconds} seconds", fix="Pass a positive duration.")
    if warmup < 0:
        raise UsageError(f"cannot warm up for {warmup} seconds", fix="Pass 0 or more.")
    if processes is not None and processes < 1:
        raise UsageError(f"cannot measure with {processes} processes", fix="Pass at least 1.")
    if max_probes < 1:
        raise UsageError(f"cannot run {max_probes} probes", fix="Pass at least 1.")
    argv = shlex.split(compiler)
    if not argv:
        return None
    cpus = one_cpu_per_core() if hasattr(os, "sched_setaffinity") else []
    count = processes if processes is not None else max(1, len(cpus) or (os.cpu_count() or 1))

    with tempfile.TemporaryDirectory(prefix="tfbuild-fmapeak-") as tmp:
        built = _compile(argv, Path(tmp))
        if built is None:
            return None
        binary, flags = built

        def probe(index: int) -> ProbeRun | None:
            lone = [cpus[index % len(cpus)]] if cpus else []
            single = _run_together(binary, 1, seconds, warmup, lone)
            if not single:
                return None
            together = single if count == 1 else _run_together(binary, count, seconds, warmup, cpus)
            if not together:
                return None
            return ProbeRun(
                single=single[0].gflops,
                single_cpu=lone[0] if lone else None,
                per_process=tuple(run.gflops for run in together),
                isa=single[0].isa,
                lanes=single[0].lanes,
            )

        runs, stopped = repeat_probes(probe, max_probes=max_probes, budget=budget, started=started)
    if not runs:
        return None
    return best_of(
        runs,
        stopped=stopped,
        compiler=compiler,
        flags=flags,
        seconds=seconds,
        warmup=warmup,
        cpus=tuple(cpus[i % len(cpus)] for i in range(count)) if cpus else (),
    )
