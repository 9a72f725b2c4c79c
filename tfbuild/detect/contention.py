"""Who else used the CPUs while we measured: the kernel's counters of CPU contention (Linux).

A timing is only as good as the CPU it ran on. ``/proc/stat`` counts, per CPU, the clock ticks
(USER_HZ, 100 a second) spent in user code (``user``, ``nice``; a virtual machine's ``guest`` time
is already inside them), in the kernel (``system``, ``irq``, ``softirq``), ``idle``, idle with I/O
pending (``iowait``), and ``steal``: time the hypervisor ran another guest on the physical core
behind this virtual CPU. ``/proc/<pid>/stat`` counts the ticks a process ran (``utime`` + ``stime``)
and those of the children it waited for (``cutime`` + ``cstime``: a child that ended inside a span
still counts). The busy ticks of the CPUs we may run on, less our own processes' ticks, are what
others ran there (a compile, another test worker): they take cores, caches, memory bandwidth and
turbo headroom from a measurement, and steal takes the CPU from under it with no process here to
show for it. Both slow a timing by an amount that changes from run to run: the noise a verdict must
see through. A cgroup's quota (a container's ``--cpus``) throttles us when it is spent, so a
parallel timing stalls in bursts. ``/proc/loadavg`` adds the kernel's run-queue averages.

The parsers are pure and strict (text in, a value or a :class:`ProcParseError` out); :func:`snapshot`
reads them all and never raises (elsewhere than Linux, or for a file it cannot read, fields are
None); :func:`between` makes a :class:`Contention` of two snapshots, :func:`combine` merges spans.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

from tfbuild.core.errors import InputError
from tfbuild.core.rounded import Round3

T = TypeVar("T")

#: Others keep a quarter of our CPUs busy: a parallel timing has lost one core in four to them.
BUSY_SHARE = 0.25
#: Others keep half a core busy: enough to move a single-threaded timing (caches, memory, turbo).
BUSY_CORES = 0.5
#: 5 % of our CPUs' time stolen by the hypervisor: more than the margin a timing verdict resolves.
STEAL_LIMIT = 0.05
#: Throttled in 5 % of the cgroup's periods: the quota, not the code, set the pace then.
THROTTLED_LIMIT = 0.05
#: Steal or throttling below 1 % is not worth a word in :meth:`Contention.describe`.
MENTION = 0.01

_UINT = re.compile(r"[0-9]{1,20}")  # ASCII digits, few enough for int()
_LOAD = r"([0-9]{1,9}\.[0-9]{2}) "
_LOADAVG = re.compile(_LOAD * 3 + r"([0-9]{1,9})/([0-9]{1,9}) [0-9]{1,9}\n?")


class ProcParseError(InputError, ValueError):
    """A kernel file whose text is not what the kernel writes."""


def _bad(what: str, text: str, expected: str) -> ProcParseError:
    why = f"expected {expected}, got {text[:80]!r}"
    return ProcParseError(f"cannot read {what}", why=why, fix="please report the file's text")


def _uint(word: str, what: str, text: str) -> int:
    if not _UINT.fullmatch(word):
        raise _bad(what, text, f"a count, not {word[:20]!r}")
    return int(word)


@dataclass(frozen=True, kw_only=True)
class LoadAverage:
    one: float  # run-queue length averaged over 1, 5 and 15 minutes
    five: float
    fifteen: float
    running: int  # runnable tasks now
    total: int  # tasks on the machine


def parse_loadavg(text: str) -> LoadAverage:
    """``/proc/loadavg``: ``0.06 0.06 0.02 2/84 3160``."""
    found = _LOADAVG.fullmatch(text)
    if found is None:
        raise _bad("/proc/loadavg", text, "'1.00 0.50 0.25 2/300 4567'")
    one, five, fifteen = map(float, found.groups()[:3])
    running, total = map(int, found.groups()[3:])
    return LoadAverage(one=one, five=five, fifteen=fifteen, running=running, total=total)


@dataclass(frozen=True, kw_only=True)
class CpuTimes:
    """One ``cpuN`` line of ``/proc/stat``, in ticks; columns an older kernel lacks are 0."""

    cpu: int
    user: int = 0
    nice: int = 0
    system: int = 0
    idle: int = 0
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0
    guest: int = 0  # inside user already (guest_nice inside nice): not added again
    guest_nice: int = 0

    @property
    def busy(self) -> int:
        return self.user + self.nice + self.system + self.irq + self.softirq

    @property
    def total(self) -> int:
        return self.busy + self.idle + self.iowait + self.steal


_COLUMNS = tuple(field.name for field in dataclasses.fields(CpuTimes))[1:]


def parse_proc_stat(text: str) -> tuple[CpuTimes, ...]:
    """The ``cpuN`` lines of ``/proc/stat`` (the ``cpu`` total and other lines are skipped)."""
    found: dict[int, CpuTimes] = {}
    for line in text.splitlines():
        words = line.split()
        if not words or not words[0].startswith("cpu") or words[0] == "cpu":
            continue
        cpu = _uint(words[0][3:], "/proc/stat", line)
        if len(words) < 5 or cpu in found:
            raise _bad("/proc/stat", line, "one 'cpuN user nice system idle ...' line per CPU")
        values = [_uint(word, "/proc/stat", line) for word in words[1:]]
        found[cpu] = CpuTimes(cpu=cpu, **dict(zip(_COLUMNS, values, strict=False)))
    if not found:
        raise _bad("/proc/stat", text, "'cpuN ...' lines")
    return tuple(found.values())


@dataclass(frozen=True, kw_only=True)
class PidStat:
    pid: int
    ppid: int
    ticks: int  # utime + stime: what the process itself ran
    children_ticks: int  # cutime + cstime: what the children it waited for ran


def parse_pid_stat(text: str) -> PidStat:
    """``/proc/<pid>/stat``; the command name may hold spaces and ``)``: it ends at the LAST ``)``."""
    head, paren, tail = text.rpartition(")")
    pid, opened, _name = head.partition(" (")
    fields = tail.split()
    if not paren or not opened or len(fields) < 15:
        raise _bad("/proc/<pid>/stat", text, "'pid (name) state ppid ...' and 50 fields")
    ppid, utime, stime, cutime, cstime = (
        _uint(fields[i], "/proc/<pid>/stat", text) for i in (1, 11, 12, 13, 14)
    )
    pid_number = _uint(pid, "/proc/<pid>/stat", text)
    return PidStat(pid=pid_number, ppid=ppid, ticks=utime + stime, children_ticks=cutime + cstime)


@dataclass(frozen=True, kw_only=True)
class CgroupEntry:
    hierarchy: int  # 0 for cgroup v2
    controllers: tuple[str, ...]  # ("cpu", "cpuacct") for a v1 hierarchy; () for v2
    path: str


def parse_self_cgroup(text: str) -> tuple[CgroupEntry, ...]:
    """``/proc/self/cgroup``: ``hierarchy:controllers:path`` lines (``0::/path`` for v2)."""
    entries = []
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, colon, path = rest.partition(":")
        if not colon or not path.startswith("/"):
            raise _bad("/proc/self/cgroup", line, "'ID:controllers:/path'")
        number = _uint(hierarchy, "/proc/self/cgroup", line)
        names = tuple(name for name in controllers.split(",") if name)
        entries.append(CgroupEntry(hierarchy=number, controllers=names, path=path))
    if not entries:
        raise _bad("/proc/self/cgroup", text, "one line per hierarchy")
    return tuple(entries)


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 ``cpu.max`` (``$MAX $PERIOD``): the quota in cores, None for ``max``."""
    words = text.split()
    if len(words) != 2 or not (words[0] == "max" or _UINT.fullmatch(words[0])):
        raise _bad("cpu.max", text, "'max 100000' or '200000 100000'")
    period = _uint(words[1], "cpu.max", text)
    if period == 0:
        raise _bad("cpu.max", text, "a period above 0")
    return None if words[0] == "max" else int(words[0]) / period


def parse_cfs_quota(quota: str, period: str) -> float | None:
    """cgroup v1 ``cpu.cfs_quota_us`` (-1: none) over ``cpu.cfs_period_us``: cores, or None."""
    period_us = _uint(period.strip(), "cpu.cfs_period_us", period)
    if period_us == 0:
        raise _bad("cpu.cfs_period_us", period, "a period above 0")
    if quota.strip() == "-1":
        return None
    return _uint(quota.strip(), "cpu.cfs_quota_us", quota) / period_us


@dataclass(frozen=True, kw_only=True)
class Throttling:
    periods: int  # enforcement periods in which the cgroup ran
    throttled: int  # ... in which it spent its quota and was stopped
    throttled_usec: int  # how long it was stopped


def parse_cpu_stat(text: str) -> Throttling | None:
    """A cgroup's ``cpu.stat`` (v2: ``throttled_usec``; v1: ``throttled_time``, ns); None when it
    has no bandwidth counters (v2 without the cpu controller)."""
    values: dict[str, int] = {}
    for line in filter(str.strip, text.splitlines()):
        key, _, value = line.strip().partition(" ")
        if not re.fullmatch(r"[a-z0-9_.]{1,64}", key):  # v2 has core_sched.force_idle_usec
            raise _bad("cpu.stat", line, "'key count' lines")
        values[key] = _uint(value, "cpu.stat", line)
    if "nr_periods" not in values:
        return None
    if "nr_throttled" not in values:
        raise _bad("cpu.stat", text, "nr_throttled beside nr_periods")
    usec = values.get("throttled_usec", values.get("throttled_time", 0) // 1000)
    return Throttling(
        periods=values["nr_periods"], throttled=values["nr_throttled"], throttled_usec=usec
    )


@dataclass(frozen=True, kw_only=True)
class CgroupCpu:
    version: int  # 1 or 2
    directory: str  # where the counters were read
    quota_cores: float | None  # None: no quota
    throttling: Throttling | None


def _parsed(path: Path, parse: Callable[[str], T]) -> T | None:
    """``path`` read and parsed; None when it cannot be read or is not what the kernel writes."""
    try:
        return parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ProcParseError):
        return None


def cgroup_directory(entries: Sequence[CgroupEntry], root: Path) -> tuple[int, Path] | None:
    """(version, directory) of our cgroup's CPU files under ``root``: v1 when a v1 hierarchy has
    the cpu controller, else v2; the mount itself when our path is not under it (in a container,
    the namespace's root is the mount's)."""

    def inside(mount: Path, path: str) -> Path:
        parts = [part for part in path.split("/") if part]
        directory = mount.joinpath(*parts)
        return directory if ".." not in parts and directory.is_dir() else mount

    for entry in entries:
        for name in (",".join(entry.controllers), "cpu,cpuacct", "cpu"):
            if "cpu" in entry.controllers and (root / name / "cpu.cfs_period_us").is_file():
                return 1, inside(root / name, entry.path)
    for entry in entries:
        if entry.hierarchy == 0 and not entry.controllers:
            return 2, inside(root, entry.path)
    return None


def read_cgroup(entries: Sequence[CgroupEntry], root: Path) -> CgroupCpu | None:
    """The CPU quota and throttling of our cgroup (``entries``: /proc/self/cgroup, ``root``: where
    cgroups are mounted); None when there is no cgroup to read."""
    found = cgroup_directory(entries, root)
    if found is None:
        return None
    version, where = found
    if version == 2:
        quota = _parsed(where / "cpu.max", parse_cpu_max)
    else:
        period = _parsed(where / "cpu.cfs_period_us", str) or ""
        quota = _parsed(where / "cpu.cfs_quota_us", partial(parse_cfs_quota, period=period))
    throttling = _parsed(where / "cpu.stat", parse_cpu_stat)
    return CgroupCpu(
        version=version, directory=str(where), quota_cores=quota, throttling=throttling
    )


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    time: float  # time.monotonic(), when /proc/stat was read
    cpus: tuple[int, ...]  # the CPUs this process may run on
    cpu_times: tuple[CpuTimes, ...] | None  # their counters; None when /proc/stat is unreadable
    ours_ticks: int | None  # what our processes (and the children they waited for) ran
    ticks_per_second: int
    load: LoadAverage | None
    cgroup: CgroupCpu | None


def _ours_ticks(proc: Path, roots: set[int]) -> int | None:
    """The ticks of the process trees under ``roots``, from every /proc/N/stat."""
    try:
        entries = [entry for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return None
    table: dict[int, PidStat] = {}
    for entry in entries:
        try:
            stat = parse_pid_stat((entry / "stat").read_bytes().decode("utf-8", "replace"))
        except (OSError, ProcParseError):
            continue  # gone since the listing
        table[stat.pid] = stat
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    todo, seen, ticks = [pid for pid in roots if pid in table], set[int](), 0
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            ticks += table[pid].ticks + table[pid].children_ticks
            todo.extend(children.get(pid, ()))
    return ticks if table else None


def snapshot(
    ours: Iterable[int] | None = None,
    *,
    proc: Path = Path("/proc"),
    cgroups: Path = Path("/sys/fs/cgroup"),
) -> Snapshot:
    """The counters now. ``ours``: the pids whose process trees count as ours (default: this
    process and its descendants). Never raises: what cannot be read is None."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = tuple(sorted(affinity(0))) if affinity else tuple(range(os.cpu_count() or 1))
    linux = sys.platform.startswith("linux")
    ours_ticks = _ours_ticks(proc, {os.getpid()} if ours is None else set(ours)) if linux else None
    now = time.monotonic()
    times = _parsed(proc / "stat", parse_proc_stat) if linux else None
    entries = _parsed(proc / "self" / "cgroup", parse_self_cgroup) if linux else None
    return Snapshot(
        time=now,
        cpus=cpus,
        cpu_times=None if times is None else tuple(t for t in times if t.cpu in cpus),
        ours_ticks=ours_ticks,
        ticks_per_second=os.sysconf("SC_CLK_TCK") if linux else 100,
        load=_parsed(proc / "loadavg", parse_loadavg) if linux else None,
        cgroup=read_cgroup(entries, cgroups) if entries else None,
    )


@dataclass(frozen=True, kw_only=True)
class Contention:
    """How shared the CPU was over one span; every float written to three decimals."""

    seconds: float
    cpus: int  # how many CPUs we may use
    others_busy: float | None  # cores of ours kept busy, on average, by processes not ours
    ours_busy: float | None  # cores our own processes used, on average
    steal: float | None  # fraction of our CPUs' time the hypervisor gave to other guests
    load_average: float | None  # the 1-minute load average at the end
    quota_cores: float | None  # the cgroup's CPU quota, None when unlimited
    throttled: float | None  # fraction of the cgroup's periods throttled; None without a cgroup

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if "float" in str(field.type) and value is not None:
                object.__setattr__(self, field.name, Round3(value))

    @property
    def _others_matter(self) -> bool:
        others = self.others_busy or 0.0
        return others >= BUSY_SHARE * self.cpus or others >= BUSY_CORES

    @property
    def busy(self) -> bool:
        """Whether others, the hypervisor or the cgroup took enough to question a timing."""
        throttled = (self.throttled or 0.0) >= THROTTLED_LIMIT
        return self._others_matter or (self.steal or 0.0) >= STEAL_LIMIT or throttled

    def describe(self) -> str:
        """One sentence: ``the CPU was shared: 1.8 other cores busy on average, 6 % steal``."""
        parts = []
        if self.others_busy is not None:
            parts.append(f"{self.others_busy:.1f} other cores busy on average")
        if self.steal is not None and self.steal >= MENTION:
            parts.append(f"{self.steal * 100:.0f} % steal")
        if self.throttled is not None and self.throttled >= MENTION:
            parts.append(f"throttled in {self.throttled * 100:.0f} % of the cgroup's periods")
        if self.quota_cores is not None and self.quota_cores < self.cpus:
            parts.append(f"a quota of {self.quota_cores:.1f} of its {self.cpus} CPUs")
        if not self.busy:
            state = "quiet" if self.others_busy is not None else "not measured here"
        elif self._others_matter or (self.steal or 0.0) >= STEAL_LIMIT:
            state = "shared"
        else:
            state = "throttled"  # busy only because the cgroup's quota ran out
        return f"the CPU was {state}" + (f": {', '.join(parts)}" if parts else "")


def between(before: Snapshot, after: Snapshot) -> Contention:
    """The contention from ``before`` to ``after`` (two :func:`snapshot` of the same process)."""
    seconds = max(after.time - before.time, 0.0)
    others = ours = steal = throttled = None
    if before.cpu_times and after.cpu_times:
        start = {times.cpu: times for times in before.cpu_times}
        pairs = [(start[t.cpu], t) for t in after.cpu_times if t.cpu in start]
        busy = sum(max(b.busy - a.busy, 0) for a, b in pairs) / after.ticks_per_second
        total = sum(max(b.total - a.total, 0) for a, b in pairs)
        steal = sum(max(b.steal - a.steal, 0) for a, b in pairs) / total if total else None
        if before.ours_ticks is not None and after.ours_ticks is not None and seconds > 0:
            ran = max(after.ours_ticks - before.ours_ticks, 0) / after.ticks_per_second
            others, ours = max(busy - ran, 0.0) / seconds, ran / seconds
    was, now = before.cgroup, after.cgroup
    if was and now and was.throttling and now.throttling and was.directory == now.directory:
        periods = now.throttling.periods - was.throttling.periods
        count = now.throttling.throttled - was.throttling.throttled
        throttled = min(max(count / periods, 0.0), 1.0) if periods > 0 else 0.0
    return Contention(
        seconds=seconds,
        cpus=len(after.cpus),
        others_busy=others,
        ours_busy=ours,
        steal=steal,
        load_average=None if after.load is None else after.load.one,
        quota_cores=None if now is None else now.quota_cores,
        throttled=throttled,
    )


def combine(spans: Sequence[Contention]) -> Contention:
    """Spans (one per op, say) as one: rates time-weighted, the last load average, the tightest
    quota. A ValueError without spans."""
    if not spans:
        msg = "combine() needs at least one span"
        raise ValueError(msg)

    def mean(value: Callable[[Contention], float | None]) -> float | None:
        known = [(v, span.seconds) for span in spans if (v := value(span)) is not None]
        weight = sum(seconds for _, seconds in known)
        if not known or weight <= 0:
            return sum(v for v, _ in known) / len(known) if known else None
        return sum(v * seconds for v, seconds in known) / weight

    loads = [span.load_average for span in spans if span.load_average is not None]
    quotas = [span.quota_cores for span in spans if span.quota_cores is not None]
    return Contention(
        seconds=sum(span.seconds for span in spans),
        cpus=max(span.cpus for span in spans),
        others_busy=mean(lambda span: span.others_busy),
        ours_busy=mean(lambda span: span.ours_busy),
        steal=mean(lambda span: span.steal),
        load_average=loads[-1] if loads else None,
        quota_cores=min(quotas) if quotas else None,
        throttled=mean(lambda span: span.throttled),
    )
