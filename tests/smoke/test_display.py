"""How ``tfbuild smoke`` prints a report: each verdict with the interval that decided it, the
undecided ones said first with the machine's state."""

from __future__ import annotations

import dataclasses
import random

import pytest

from tests.measure.machines import QUIET, shared
from tests.measure.results import timed
from tfbuild.cli.wheel_display import print_smoke
from tfbuild.core.stats import verdict
from tfbuild.detect.contention import Contention
from tfbuild.measure.run import Method, OpResult
from tfbuild.smoke.messages import parse_messages
from tfbuild.smoke.probe import ProbeResult
from tfbuild.smoke.report import SmokeReport

SHARED = shared()


def noisy(rng: random.Random, median: float, sigma: float, n: int = 15) -> list[float]:
    return [median * rng.lognormvariate(0, sigma) for _ in range(n)]


def _result(
    op: str,
    candidate: list[float],
    baseline: list[float],
    machine: Contention = QUIET,
) -> OpResult:
    return timed(
        op,
        candidate,
        baseline,
        work=1e9,
        unit="GFLOP/s",
        contention=machine,
    )


def _report(machine: Contention = QUIET) -> SmokeReport:
    """The same report at every call (the golden files hold it): its noise is seeded here."""
    rng = random.Random(4)
    same = noisy(rng, 1e-3, 0.01)
    return SmokeReport(
        candidate_label="candidate.whl",
        baseline_label="tensorflow-cpu==2.21.0",
        candidate=ProbeResult(
            ok=True,
            returncode=0,
            signal=None,
            failure=None,
            version="2.21.0",
            git_version="v2.21.0",
            guard=parse_messages(""),
        ),
        baseline=None,
        method=Method(),
        results=(
            _result("exp", [t / 1.6 for t in same], same, machine),
            _result("add", same, [t * 1.002 for t in same], machine),
            _result("erf", noisy(rng, 1e-3, 0.6), noisy(rng, 1e-3, 0.6), machine),
            _result("matmul_2048", [t / 2 for t in same], same, machine),
            _result("matmul_1024", same, same, machine),
        ),
    )


def rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if line.strip()}


def test_each_verdict_shows_the_interval_that_decided_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    print_smoke(_report())
    lines = rows(capsys.readouterr().out)
    assert "faster 1.60x ±" in lines["exp"]
    assert "same 1.00x ±" in lines["add"]
    assert "undecided" in lines["erf"] and "±" in lines["erf"]
    assert "faster 2.00x ±" in lines["matmul_2048"] and "pk" not in lines["matmul_2048"]
    assert lines["machine:"] == "machine: the CPU was quiet: 0.0 other cores busy on average"


def test_undecided_ops_are_said_before_the_table_with_the_busy_machine_and_the_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    report = _report(SHARED)
    print_smoke(report)
    out = capsys.readouterr().out
    first = out.index("undecided: the CPU was shared: 1.8 other cores busy on average, 6 % steal")
    assert first < out.index("exp ")
    assert "1 of 5 comparisons undecided (±" in out
    assert "Run again on a quiet machine, pin tfbuild to CPUs others leave idle" in " ".join(
        out.split()
    )
    assert report.passed  # undecided is no failure
    assert report.to_json()["undecided"] == ["erf (default)"]


def test_on_a_quiet_machine_an_undecided_op_blames_its_own_noise(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    print_smoke(_report())
    out = capsys.readouterr().out
    assert "the ops' own noise was too wide to tell. Give a longer --budget." in out
    assert "the CPU was shared" not in out


def test_in_an_80_column_terminal_the_verdict_wraps_and_nothing_is_cut(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    print_smoke(_report(SHARED))
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    assert "GFLOP/s" not in out and "GF/s" in out


def test_a_claim_a_fresh_pair_of_processes_does_not_repeat_is_undecided_and_said_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stock wheel against itself once came out 0.77x on tanh in one pair of processes, every
    pair of repetitions agreeing; the recheck in a fresh pair found it the same."""
    from tfbuild.measure.run import _settled

    rng = random.Random(9)
    base = noisy(rng, 1e-3, 0.01)
    claim = _result("tanh", [t / 0.77 for t in base], base)
    assert claim.verdict is not None and claim.verdict.label == "slower"
    again = verdict(base, [t * 1.001 for t in base], paired=True)
    lost, held = _settled(claim, again), _settled(claim, claim.verdict)
    assert lost.verdict is not None and lost.verdict.label == "undecided"
    assert lost.recheck == again and held.verdict == claim.verdict and held.recheck is not None
    report = dataclasses.replace(_report(), results=(lost,))
    monkeypatch.setenv("COLUMNS", "200")
    print_smoke(report)
    out = " ".join(capsys.readouterr().out.split())
    assert "1 of 1 comparisons undecided" in out
    assert "1 of them differed between two pairs of processes of the same builds" in out
    assert report.passed  # a claim that does not repeat fails nothing
