"""How tune judges a setting from its ops' verdicts: wins, loses, no gain, or undecided (never
rejected for want of evidence without saying so), and how the profile and the report say it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.measure.machines import QUIET, shared
from tests.measure.results import timed
from tfbuild.detect.contention import Contention
from tfbuild.measure.run import LOSES, NO_GAIN, WINS, OpResult, SettingTrial
from tfbuild.measure.tune import TuneReport, gain, write_profile

RNG = random.Random(11)
SHARED = shared(others_busy=1.9, steal=0.0)


def op(name: str, speedup: float, sigma: float, machine: Contention) -> OpResult:
    """A setting's op timed in 15 pairs against the defaults; true speed-up ``speedup``."""
    base = [1e-3 * RNG.lognormvariate(0, sigma) for _ in range(15)]
    cand = [b / speedup * RNG.lognormvariate(0, sigma) for b in base]
    return timed(name, cand, base, work=1e6, unit="Gelem/s", contention=machine)


def trial(name: str, speedups: list[float], sigma: float, machine: Contention) -> SettingTrial:
    ops = [op(f"op{i}", s, sigma, machine) for i, s in enumerate(speedups)]
    return SettingTrial(
        name=name, env=(("X_" + name.upper(), "1"),), intra=0, inter=0, results=tuple(ops)
    )


@pytest.mark.parametrize(
    ("speedups", "sigma", "outcome"),
    [
        ([1.5, 1.5, 1.5, 1.0, 1.0], 0.01, WINS),  # faster on most ops, slower on none
        ([1.5, 1.5, 1.5, 1.0, 0.6], 0.01, LOSES),  # one op slower: never kept
        ([1.0, 1.0, 1.0, 1.0, 1.0], 0.01, NO_GAIN),  # decided: the same everywhere
        ([1.0, 1.0, 1.0, 1.0, 1.0], 0.6, "undecided"),  # nothing could be told
    ],
)
def test_a_setting_is_judged_from_its_ops(
    speedups: list[float], sigma: float, outcome: str
) -> None:
    found = trial("s", speedups, sigma, QUIET)
    assert found.outcome == outcome, [r.verdict.label for r in found.results if r.verdict]
    assert found.wins == (outcome == WINS)
    assert found.to_json()["outcome"] == outcome
    median, low, high = gain(found)
    assert low <= median <= high


def test_an_undecided_setting_is_said_first_with_the_busy_machine(tmp_path: Path) -> None:
    noisy = trial("onednn off", [1.0] * 5, 0.6, SHARED)
    clear = trial("tcmalloc", [1.0] * 5, 0.01, SHARED)
    report = TuneReport(
        wheel="w", tried=(noisy, clear), not_tried=(), confirmation=None, seconds=60.0
    )
    assert [t.name for t in report.undecided] == ["onednn off"]
    note = report.undecided_note()
    assert note == (
        "the CPU was shared: 1.9 other cores busy on average: onednn off undecided, so not kept. "
        "Run again on a quiet machine, pin tfbuild to CPUs others leave idle (taskset -c LIST "
        "tfbuild ...), or give a longer --budget."
    )
    data = report.to_json()
    assert data["undecided"] == ["onednn off"] and data["undecided_note"] == note
    assert data["machine"]["others_busy"] == 1.9
    profile = tmp_path / "w.env"
    write_profile(profile, report)
    assert f"# {note}" in profile.read_text().splitlines()


def test_on_a_quiet_machine_nothing_undecided_says_nothing_of_it() -> None:
    report = TuneReport(
        wheel="w",
        tried=(trial("tcmalloc", [1.0] * 5, 0.01, QUIET),),
        not_tried=(),
        confirmation=None,
        seconds=60.0,
    )
    assert report.undecided == () and report.undecided_note() is None
    assert report.machine is not None and not report.machine.busy
