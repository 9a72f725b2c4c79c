"""CPU contention from the kernel's counters: the parsers on recorded files, cgroup v1 and v2 trees,
the arithmetic of a span, and the real thing (a busy neighbour that is not ours, a child that is)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfbuild.core import serial
from tfbuild.core.errors import InputError
from tfbuild.detect.contention import (
    CgroupCpu,
    Contention,
    CpuTimes,
    LoadAverage,
    ProcParseError,
    Snapshot,
    Throttling,
    between,
    combine,
    parse_cfs_quota,
    parse_cpu_max,
    parse_cpu_stat,
    parse_loadavg,
    parse_pid_stat,
    parse_proc_stat,
    parse_self_cgroup,
    read_cgroup,
    snapshot,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "contention"
LINUX = sys.platform.startswith("linux")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------- the parsers on recorded files


def test_loadavg_recorded() -> None:
    text = fixture("linux-6.18-loadavg")
    one, five, fifteen, tasks, _last_pid = text.split()
    assert parse_loadavg(text) == LoadAverage(
        one=float(one),
        five=float(five),
        fifteen=float(fifteen),
        running=int(tasks.split("/")[0]),
        total=int(tasks.split("/")[1]),
    )


def test_proc_stat_recorded_has_every_cpu_and_every_column() -> None:
    text = fixture("linux-6.18-stat")
    times = parse_proc_stat(text)
    lines = [line.split() for line in text.splitlines() if line.startswith("cpu")]
    assert [t.cpu for t in times] == [0, 1]  # the "cpu" total line is not a CPU
    for line, cpu in zip(lines[1:], times, strict=True):
        columns = [int(word) for word in line[1:]]
        assert (cpu.user, cpu.nice, cpu.system, cpu.idle, cpu.iowait) == tuple(columns[:5])
        assert (cpu.irq, cpu.softirq, cpu.steal, cpu.guest, cpu.guest_nice) == tuple(columns[5:])
        assert cpu.busy == sum(columns[:3]) + sum(columns[5:7])  # guest is inside user already
        assert cpu.total == cpu.busy + cpu.idle + cpu.iowait + cpu.steal
    assert sum(t.steal for t in times) > 0  # recorded in a VM


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Linux 2.4: four columns; 2.6.0: seven (iowait irq softirq); 2.6.11: steal; 2.6.24: guest.
        ("cpu0 10 1 5 100", CpuTimes(cpu=0, user=10, nice=1, system=5, idle=100)),
        (
            "cpu3 10 1 5 100 7 2 3",
            CpuTimes(cpu=3, user=10, nice=1, system=5, idle=100, iowait=7, irq=2, softirq=3),
        ),
        (
            "cpu1 10 1 5 100 7 2 3 4 6",
            CpuTimes(
                cpu=1,
                user=10,
                nice=1,
                system=5,
                idle=100,
                iowait=7,
                irq=2,
                softirq=3,
                steal=4,
                guest=6,
            ),
        ),
    ],
)
def test_proc_stat_of_older_kernels_has_fewer_columns(line: str, expected: CpuTimes) -> None:
    assert parse_proc_stat(f"cpu  1 2 3 4\n{line}\nintr 5 6\n") == (expected,)


def test_pid_stat_recorded() -> None:
    cat = parse_pid_stat(fixture("linux-6.18-pid-stat-cat"))
    assert (cat.pid, cat.ppid, cat.ticks, cat.children_ticks) == (3574, 3569, 0, 0)
    busy = parse_pid_stat(fixture("linux-6.18-pid-stat-python-busy"))
    assert (busy.pid, busy.ppid, busy.ticks, busy.children_ticks) == (3962, 3960, 15 + 38, 14 + 22)


def test_pid_stat_name_with_spaces_and_parentheses_ends_at_the_last_one() -> None:
    text = fixture("linux-6.18-pid-stat-comm-parens")
    assert text.startswith("3943 (x) y (z)) S 3941 ")
    stat = parse_pid_stat(text)
    assert (stat.pid, stat.ppid, stat.ticks, stat.children_ticks) == (3943, 3941, 0, 0)
    # The same name with numbers after each ")": only the last ")" ends it.
    tricky = text.replace("(x) y (z))", "(1 2) 3 4) 5 6 7 8 9 10 11 12 13 14 15 16)")
    assert parse_pid_stat(tricky) == stat


def test_self_cgroup_recorded_v1_hybrid() -> None:
    entries = parse_self_cgroup(fixture("linux-6.18-self-cgroup-v1-hybrid"))
    assert [
        (e.hierarchy, e.controllers, e.path) for e in entries if e.hierarchy in (0, 1, 4, 9)
    ] == [
        (9, ("name=systemd",), "/"),
        (4, ("memory",), "/process_api/a94d014345c1596978dfab16cc3ca297"),
        (1, ("cpu",), "/"),
        (0, (), "/"),
    ]


def test_cgroup_files_recorded_v1_and_documented_v2() -> None:
    quota, period = (
        fixture("linux-6.18-cgroup-v1-cpu.cfs_quota_us"),
        fixture("linux-6.18-cgroup-v1-cpu.cfs_period_us"),
    )
    assert parse_cfs_quota(quota, period) is None  # -1: no quota
    assert parse_cfs_quota("150000\n", period) == 1.5
    assert parse_cpu_stat(fixture("linux-6.18-cgroup-v1-cpu.stat")) == Throttling(
        periods=0, throttled=0, throttled_usec=0
    )
    assert parse_cpu_stat("nr_periods 10\nnr_throttled 3\nthrottled_time 5000000\n") == Throttling(
        periods=10,
        throttled=3,
        throttled_usec=5000,  # v1 counts nanoseconds
    )
    assert parse_cpu_max(fixture("doc-cgroup-v2-cpu.max-unlimited")) is None
    assert parse_cpu_max(fixture("doc-cgroup-v2-cpu.max-limited")) == 1.5
    assert parse_cpu_stat(fixture("doc-cgroup-v2-cpu.stat")) == Throttling(
        periods=5120, throttled=256, throttled_usec=1843200
    )
    assert parse_cpu_stat(fixture("doc-cgroup-v2-cpu.stat-no-controller")) is None
    assert parse_self_cgroup(fixture("doc-cgroup-v2-self-cgroup"))[0].path == (
        "/test-cgroup/test-cgroup-nested"
    )


BAD = [
    (parse_loadavg, ""),
    (parse_loadavg, "0.06 0.06 0.02 2/84"),  # truncated
    (parse_loadavg, "0.06 0.06 nan 2/84 3160\n"),
    (parse_loadavg, "0.06 0.06 0.02 2/84 3160 extra\n"),
    (parse_loadavg, "١.٠٠ 0.06 0.02 2/84 3160\n"),  # digits, but not ASCII ones
    (parse_proc_stat, ""),
    (parse_proc_stat, "cpu  1 2 3 4\nintr 1\n"),  # no cpuN line
    (parse_proc_stat, "cpu0 1 2 3\n"),  # too few columns
    (parse_proc_stat, "cpu0 1 2 3 -4\n"),
    (parse_proc_stat, "cpu0 1 2 3 4\ncpu0 1 2 3 4\n"),  # the same CPU twice
    (parse_proc_stat, "cpux 1 2 3 4\n"),
    (parse_proc_stat, "cpu0 1 2 3 " + "9" * 5000 + "\n"),  # longer than int() takes
    (parse_pid_stat, ""),
    (parse_pid_stat, "3574 (cat) R 3569 3569"),  # truncated
    (parse_pid_stat, "3574 cat R 3569 3569 2335 0 -1 4194304 115 0 0 0 0 0 0 0 20 0"),
    (parse_pid_stat, "x (cat) R 3569 3569 2335 0 -1 4194304 115 0 0 0 0 0 0 0 20 0"),
    (parse_pid_stat, "1 (cat) R 3569 3569 2335 0 -1 4194304 115 0 0 0 zero 0 0 0 20 0"),
    (parse_self_cgroup, ""),
    (parse_self_cgroup, "0::\n"),  # no path
    (parse_self_cgroup, "cpu:/\n"),
    (parse_self_cgroup, "x:cpu:/\n"),
    (parse_cpu_max, ""),
    (parse_cpu_max, "max"),
    (parse_cpu_max, "200000 0"),
    (parse_cpu_max, "-1 100000"),
    (parse_cpu_max, "max 100000 9"),
    (parse_cpu_stat, "nr_periods\n"),
    (parse_cpu_stat, "nr_periods 10\n"),  # no nr_throttled
    (parse_cpu_stat, "nr periods 10\n"),
    (parse_cpu_stat, "NR_PERIODS 10\nnr_throttled 1\n"),
    (lambda text: parse_cfs_quota(text, "100000"), "-2"),
    (lambda text: parse_cfs_quota(text, "100000"), ""),
    (lambda text: parse_cfs_quota("-1", text), "0"),
    (lambda text: parse_cfs_quota("-1", text), "1e5"),
]


@pytest.mark.parametrize(("parse", "text"), BAD)
def test_truncated_and_garbage_text_is_refused_clearly(
    parse: Callable[[str], object], text: str
) -> None:
    with pytest.raises(ProcParseError) as caught:
        parse(text)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, InputError)
    assert caught.value.line().startswith("cannot read ")


PARSERS: list[Callable[[str], object]] = [
    parse_loadavg,
    parse_proc_stat,
    parse_pid_stat,
    parse_self_cgroup,
    parse_cpu_max,
    parse_cpu_stat,
    lambda text: parse_cfs_quota(text, "100000"),
    lambda text: parse_cfs_quota("-1", text),
]
RECORDED = sorted(path.name for path in FIXTURES.iterdir() if path.name != "README.md")
# What the kernel's files are made of, so that random text often gets past the first check.
KERNEL_TEXT = st.text(alphabet="0123456789 \n\t()/:.,-_cpumaxnr" + "ä)\x00", max_size=300)


def _parses_or_refuses(parse: Callable[[str], object], text: str) -> None:
    with contextlib.suppress(ProcParseError):  # the one error a parser may raise
        parse(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(index=st.integers(0, len(PARSERS) - 1), text=st.one_of(st.text(max_size=300), KERNEL_TEXT))
def test_random_text_raises_only_the_parse_error(index: int, text: str) -> None:
    _parses_or_refuses(PARSERS[index], text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(index=st.integers(0, len(PARSERS) - 1), name=st.sampled_from(RECORDED), data=st.data())
def test_recorded_files_cut_or_spoiled_raise_only_the_parse_error(
    index: int, name: str, data: st.DataObject
) -> None:
    text = fixture(name)
    cut = data.draw(st.integers(0, len(text)))
    insert = data.draw(st.text(max_size=3))
    _parses_or_refuses(
        PARSERS[index], text[:cut] + insert + text[cut + data.draw(st.integers(0, 3)) :]
    )


# ---------------------------------------------------------------- finding our cgroup


def _plant(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")


V1_FILES = {
    "cpu.cfs_quota_us": fixture("linux-6.18-cgroup-v1-cpu.cfs_quota_us"),
    "cpu.cfs_period_us": fixture("linux-6.18-cgroup-v1-cpu.cfs_period_us"),
    "cpu.stat": fixture("linux-6.18-cgroup-v1-cpu.stat"),
}


def test_cgroup_v1_recorded_tree(tmp_path: Path) -> None:
    _plant(tmp_path / "cpu", V1_FILES)
    _plant(tmp_path / "unified", {"cpu.stat": fixture("doc-cgroup-v2-cpu.stat-no-controller")})
    found = read_cgroup(parse_self_cgroup(fixture("linux-6.18-self-cgroup-v1-hybrid")), tmp_path)
    assert found == CgroupCpu(
        version=1,
        directory=str(tmp_path / "cpu"),
        quota_cores=None,
        throttling=Throttling(periods=0, throttled=0, throttled_usec=0),
    )


@pytest.mark.parametrize("planted", [True, False], ids=["own-directory", "container-root"])
def test_cgroup_v1_cpu_cpuacct_mount_and_container_fallback(tmp_path: Path, planted: bool) -> None:
    mount = tmp_path / "cpu,cpuacct"
    limited = {
        **V1_FILES,
        "cpu.cfs_quota_us": "50000\n",
        "cpu.stat": "nr_periods 8\nnr_throttled 2\nthrottled_time 7000\n",
    }
    _plant(mount, V1_FILES)
    if planted:
        _plant(mount / "docker" / "abc", limited)
    else:  # inside a container the path names the host's directory; the mount is ours
        _plant(mount, limited)
    found = read_cgroup(
        parse_self_cgroup("4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n"), tmp_path
    )
    assert found is not None
    assert found.directory == str(mount / "docker" / "abc" if planted else mount)
    assert (found.version, found.quota_cores) == (1, 0.5)
    assert found.throttling == Throttling(periods=8, throttled=2, throttled_usec=7)


def test_cgroup_v2_documented_tree(tmp_path: Path) -> None:
    nested = tmp_path / "test-cgroup" / "test-cgroup-nested"
    # The root has no cpu.max (the kernel writes none there); our own group has a quota.
    _plant(tmp_path, {"cpu.stat": fixture("doc-cgroup-v2-cpu.stat-no-controller")})
    _plant(
        nested,
        {
            "cpu.max": fixture("doc-cgroup-v2-cpu.max-limited"),
            "cpu.stat": fixture("doc-cgroup-v2-cpu.stat"),
        },
    )
    found = read_cgroup(parse_self_cgroup(fixture("doc-cgroup-v2-self-cgroup")), tmp_path)
    assert found == CgroupCpu(
        version=2,
        directory=str(nested),
        quota_cores=1.5,
        throttling=Throttling(periods=5120, throttled=256, throttled_usec=1843200),
    )
    # A path that is not under the mount (a container's namespace), or climbs out of it: the root.
    for path in ("/not/here", "/../../etc"):
        outside = read_cgroup(parse_self_cgroup(f"0::{path}\n"), tmp_path)
        assert outside is not None
        assert outside.directory == str(tmp_path)
        assert (outside.quota_cores, outside.throttling) == (None, None)


def test_no_cgroup_mounted_is_none(tmp_path: Path) -> None:
    # A v1 hierarchy named, nothing mounted, no v2 line.
    assert read_cgroup(parse_self_cgroup("1:cpu:/\n"), tmp_path) is None


# ---------------------------------------------------------------- snapshots of planted and absent trees


def _pid_stat(pid: int, ppid: int, ticks: int, children: int = 0) -> str:
    return (
        f"{pid} (w (x)) R {ppid} 1 1 0 -1 4194304 1 0 0 0 {ticks} 0 {children} 0 20 0 1 0 5 6 7\n"
    )


@pytest.mark.skipif(not LINUX, reason="snapshot reads /proc on Linux only")
def test_snapshot_of_a_planted_proc_counts_the_trees_of_ours(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _plant(proc, {"stat": fixture("linux-6.18-stat"), "loadavg": fixture("linux-6.18-loadavg")})
    _plant(proc / "self", {"cgroup": fixture("linux-6.18-self-cgroup-v1-hybrid")})
    _plant(tmp_path / "cgroup" / "cpu", V1_FILES)
    tree = {100: (1, 7, 40), 101: (100, 5, 0), 102: (101, 3, 0), 103: (100, 2, 0), 200: (1, 900, 0)}
    for pid, (ppid, ticks, children) in tree.items():
        _plant(proc / str(pid), {"stat": _pid_stat(pid, ppid, ticks, children)})
    _plant(proc / "300", {"stat": "garbage"})  # skipped, as a process gone since the listing is
    _plant(proc / "301", {})  # no stat file at all
    taken = snapshot([100], proc=proc, cgroups=tmp_path / "cgroup")
    assert taken.ours_ticks == 7 + 40 + 5 + 3 + 2  # 100 with its waited-for children, 101-103
    assert snapshot([101, 200], proc=proc, cgroups=tmp_path / "cgroup").ours_ticks == 5 + 3 + 900
    assert snapshot([], proc=proc).ours_ticks == 0  # nothing is ours
    assert taken.load == parse_loadavg(fixture("linux-6.18-loadavg"))
    assert taken.cgroup is not None
    assert taken.cgroup.version == 1
    wanted = set(taken.cpus)
    assert taken.cpu_times == tuple(
        t for t in parse_proc_stat(fixture("linux-6.18-stat")) if t.cpu in wanted
    )


def test_nothing_readable_gives_none_and_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = snapshot(proc=tmp_path / "no-proc", cgroups=tmp_path / "no-cgroup")
    _plant(tmp_path / "proc", {"stat": "garbage", "loadavg": "garbage"})
    _plant(tmp_path / "proc" / "self", {"cgroup": "garbage"})
    spoiled = snapshot(proc=tmp_path / "proc", cgroups=tmp_path)
    monkeypatch.setattr(sys, "platform", "darwin")
    elsewhere = snapshot()
    for taken in (missing, spoiled, elsewhere):
        assert (taken.cpu_times, taken.load, taken.cgroup) == (None, None, None)
        assert taken.cpus
        span = between(taken, taken)
        assert (span.others_busy, span.steal, span.throttled, span.quota_cores) == (None,) * 4
        assert not span.busy
        assert span.describe() == "the CPU was not measured here"
    assert (missing.ours_ticks, elsewhere.ours_ticks) == (None, None)


# ---------------------------------------------------------------- the arithmetic of a span


def _snap(
    at: float,
    ours: int,
    cpu0: tuple[int, int, int],
    cpu1: tuple[int, int, int],
    *,
    periods: tuple[int, int] | None = None,
) -> Snapshot:
    """``cpuN``: (busy user ticks, idle, steal)."""
    throttling = (
        None
        if periods is None
        else Throttling(periods=periods[0], throttled=periods[1], throttled_usec=0)
    )
    return Snapshot(
        time=at,
        cpus=(0, 1),
        cpu_times=tuple(
            CpuTimes(cpu=cpu, user=user, guest=user // 2, idle=idle, steal=steal)
            for cpu, (user, idle, steal) in enumerate((cpu0, cpu1))
        ),
        ours_ticks=ours,
        ticks_per_second=100,
        load=LoadAverage(one=at / 10, five=0.0, fifteen=0.0, running=1, total=9),
        cgroup=CgroupCpu(version=2, directory="/x", quota_cores=1.5, throttling=throttling),
    )


def test_between_subtracts_ours_and_counts_steal() -> None:
    before = _snap(10.0, 1000, (500, 500, 0), (500, 500, 0), periods=(100, 5))
    # 2 s: 400 ticks on two CPUs: 300 busy (guest inside user, not added), 80 idle, 20 stolen;
    # our processes ran 100 of the 300: others kept (300 - 100) / 100 / 2 = 1 core busy.
    after = _snap(12.0, 1100, (680, 520, 0), (620, 560, 20), periods=(300, 29))
    span = between(before, after)
    assert span == Contention(
        seconds=2.0,
        cpus=2,
        others_busy=1.0,
        ours_busy=0.5,
        steal=0.05,
        load_average=1.2,
        quota_cores=1.5,
        throttled=0.12,
    )
    assert span.busy
    assert span.describe() == (
        "the CPU was shared: 1.0 other cores busy on average, 5 % steal, "
        "throttled in 12 % of the cgroup's periods, a quota of 1.5 of its 2 CPUs"
    )
    # Our processes ran more than the CPUs counted (accounting skew): floored at 0, not negative.
    assert between(before, _snap(12.0, 1400, (680, 520, 0), (620, 560, 20))).others_busy == 0.0


def test_between_without_cgroup_counters_has_no_throttling() -> None:
    before, after = _snap(0.0, 0, (0, 0, 0), (0, 0, 0)), _snap(1.0, 0, (10, 90, 0), (0, 100, 0))
    assert between(before, after).throttled is None
    assert between(after, after).steal is None  # no tick elapsed: no fraction to speak of


@pytest.mark.parametrize(
    ("cpus", "others", "steal", "throttled", "busy"),
    [
        (1, 0.24, 0.0, 0.0, False),
        (1, 0.25, 0.0, 0.0, True),  # a quarter of our one CPU
        (64, 0.49, 0.0, 0.0, False),
        (64, 0.5, 0.0, 0.0, True),  # half a core, however many we have
        (8, 0.1, 0.049, 0.049, False),
        (8, 0.1, 0.05, 0.0, True),
        (8, 0.1, 0.0, 0.05, True),
    ],
)
def test_busy_thresholds(
    cpus: int, others: float, steal: float, throttled: float, busy: bool
) -> None:
    span = Contention(
        seconds=1.0,
        cpus=cpus,
        others_busy=others,
        ours_busy=0.0,
        steal=steal,
        load_average=None,
        quota_cores=None,
        throttled=throttled,
    )
    assert span.busy is busy


SPAN = Contention(
    seconds=1.0,
    cpus=2,
    others_busy=0.0,
    ours_busy=1.0,
    steal=0.0,
    load_average=0.5,
    quota_cores=None,
    throttled=None,
)


def _span(seconds: float, others: float | None, **changes: float | None) -> Contention:
    return dataclasses.replace(SPAN, seconds=seconds, others_busy=others, **changes)


def test_describe_says_only_what_matters() -> None:
    assert _span(1.0, 1.8, steal=0.06).describe() == (
        "the CPU was shared: 1.8 other cores busy on average, 6 % steal"
    )
    assert _span(1.0, 0.1, steal=0.004, quota_cores=4.0).describe() == (
        "the CPU was quiet: 0.1 other cores busy on average"
    )
    assert _span(1.0, 0.1, throttled=0.3, quota_cores=1.0).describe() == (
        "the CPU was throttled: 0.1 other cores busy on average, "
        "throttled in 30 % of the cgroup's periods, a quota of 1.0 of its 2 CPUs"
    )


def test_combine_weighs_by_time() -> None:
    spans = [
        _span(1.0, 1.6, steal=0.1, throttled=0.0, quota_cores=1.0, load_average=3.0),
        _span(3.0, 0.0, steal=0.0, load_average=None),
        _span(0.0, None, steal=None, load_average=None),
    ]
    merged = combine(spans)
    assert merged == _span(4.0, 0.4, steal=0.025, throttled=0.0, quota_cores=1.0, load_average=3.0)
    assert not merged.busy and combine(spans[:1]).busy
    assert combine([_span(0.0, 1.0), _span(0.0, 0.0)]).others_busy == 0.5  # no time: a plain mean
    assert combine([_span(1.0, None)]).others_busy is None
    with pytest.raises(ValueError, match="at least one"):
        combine([])


def test_contention_is_json_with_rounded_figures() -> None:
    span = _span(1.23456, 1.98765, steal=0.0123456, quota_cores=None)
    data = serial.to_data(span)
    assert data == {
        "seconds": 1.235,
        "cpus": 2,
        "others_busy": 1.988,
        "ours_busy": 1.0,
        "steal": 0.012,
        "load_average": 0.5,
        "quota_cores": None,
        "throttled": None,
    }
    assert span.others_busy == 1.98765  # kept exact for arithmetic
    assert serial.to_data(serial.from_data(data, Contention)) == data


# ---------------------------------------------------------------- the real thing


@pytest.mark.skipif(not LINUX, reason="the kernel's counters are Linux's")
def test_snapshot_of_this_machine_is_complete_and_cheap() -> None:
    taken = snapshot()
    assert taken.cpu_times is not None
    assert {t.cpu for t in taken.cpu_times} <= set(taken.cpus)
    assert taken.ours_ticks is not None
    assert taken.load is not None
    durations = []
    for _ in range(5):
        start = time.perf_counter()
        snapshot()
        durations.append(time.perf_counter() - start)
    assert min(durations) < 1.0  # ~2 ms here; a bound that only a broken reader misses


@contextlib.contextmanager
def neighbours(cpus: tuple[int, ...]) -> Iterator[list[int]]:
    """A CPU-bound process on each of ``cpus`` that is NOT ours: started by a shell that exits at
    once, so it is reparented away from this process. Killed, whatever happens."""
    pids: list[int] = []
    try:
        for cpu in cpus:
            started = subprocess.run(
                [
                    "sh",
                    "-c",
                    '"$0" -c "while True: pass" </dev/null >/dev/null 2>&1 & echo $!',
                    sys.executable,
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            )
            pids.append(int(started.stdout))
            with contextlib.suppress(OSError):
                os.sched_setaffinity(pids[-1], {cpu})
        deadline = time.monotonic() + 30
        for pid in pids:  # until each has run a few ticks: spinning, not starting
            stat = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
            while stat.ticks < 5 and time.monotonic() < deadline:
                time.sleep(0.02)
                stat = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
            assert stat.ppid != os.getpid()
        yield pids
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not LINUX, reason="the kernel's counters are Linux's")
def test_a_neighbour_on_every_cpu_is_others_busy() -> None:
    cpus = snapshot().cpus
    with neighbours(cpus):
        before = snapshot()
        time.sleep(1.5)
        after = snapshot()
    span = between(before, after)
    assert span.others_busy is not None and span.ours_busy is not None
    # What more load cannot break: the neighbours' cores (less what a quota or the hypervisor took)
    # were someone else's, and none of their time was ours.
    usable = min(len(cpus), span.quota_cores or len(cpus))
    assert span.others_busy + (span.steal or 0.0) * span.cpus >= 0.6 * usable, span
    assert span.busy, span
    assert span.ours_busy * span.seconds < 0.5, span
    assert span.describe().startswith(("the CPU was shared: ", "the CPU was throttled: "))


CHILD = """
import sys, time
while time.process_time() < 1.0:
    pass
print("spun", flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not LINUX, reason="the kernel's counters are Linux's")
def test_our_own_child_is_ours_not_others() -> None:
    # The spans "nothing is ours" enclose the spans of ours, so that they count every tick of them.
    nobody_before = snapshot(ours=())
    before = snapshot()
    command = [sys.executable, "-c", CHILD]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline() == "spun\n"  # a second of CPU, however long it took
            alive = snapshot()
            child.stdin.close()
            child.wait(timeout=60)
            reaped = snapshot()
            nobody_after = snapshot(ours=())
        finally:
            child.kill()  # nothing when it has ended
    running, done = between(before, alive), between(before, reaped)
    nobody = between(nobody_before, nobody_after)
    for span in (running, done, nobody):
        assert span.others_busy is not None and span.ours_busy is not None
    assert running.ours_busy * running.seconds >= 0.7, running  # a live child: its own ticks
    assert done.ours_busy * done.seconds >= 0.7, done  # reaped: in our cutime
    assert nobody.ours_busy == 0.0
    # Counted as nobody's, its second is another's; counted as ours, it is taken out of others_busy.
    others_nobody = nobody.others_busy * nobody.seconds
    assert others_nobody - done.others_busy * done.seconds >= 0.6, (nobody, done)
